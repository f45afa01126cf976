"""Retrieval dev sets made from ../shared/data at run time, in the eval sets' format.

Each set is written to a temporary folder as corpus.jsonl ({"id","title","text"}) and
queries.jsonl ({"id","question","gold":[ids],"type"}); nothing is copied into the project.

- asvs-en2zh: each English ASVS 4.0.3 requirement asked of the Chinese requirements (one passage
  per requirement, no title); the gold is the same requirement id. Cross-lingual, EN -> ZH.
- asvs-zh2en: the reverse: each Chinese requirement asked of the English ones. ZH -> EN.
- crud-lede: Chinese news (CRUD-RAG, 1,930 articles): the article's first sentence is the
  question, the rest of the article (without that sentence) the passage; every fourth article
  with a first sentence is asked (472 questions) over all 1,930. Chinese, known-item.
- asvs-terms: the 53 English glossary terms of ASVS 4.0.3 ("Address Space Layout Randomization
  (ASLR)") asked of the 53 Chinese glossary entries (term and definition; some keep the English
  name or acronym beside the Chinese), paired by their order in the two glossaries. EN -> ZH, with
  the loanword overlap real Chinese documents have.
- asvs-sections: each English section heading without its number ("Session Binding") asked of
  the Chinese sections' bodies (requirement tables and prose, without the heading), paired by the
  section number. EN -> ZH, short questions over long passages.
- cwe-names: each CWE weakness name ("Improper Neutralization of ...") asked of the weakness
  descriptions (description and extended description, without the name); every second weakness
  is asked (469) over all 938. English, paraphrase-heavy.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ASVS = DATA / "docs" / "asvs-4.0.3"
_LINK = re.compile(r"\s*\(\[[^\]]*\]\([^)]*\)\)")  # "([C1](https://...))" references
_SENTENCE = re.compile(r"^(.{12,160}?[。！？!?])")
_DATELINE = re.compile(r"^.{0,40}?正文[:：]\s*")

__all__ = ["DEV_SETS", "write_dev_set"]


def _asvs(language: str) -> dict[str, str]:
    path = ASVS / f"ASVS_4.0.3-{language}.csv"
    with path.open(encoding="utf-8-sig") as f:
        return {
            r["req_id"]: _LINK.sub("", r["req_description"]).strip()
            for r in csv.DictReader(f)
            if r["req_description"].strip()
        }


def _asvs_pair(ask: str, over: str) -> tuple[list[dict], list[dict]]:
    questions, passages = _asvs(ask), _asvs(over)
    corpus = [{"id": rid, "title": "", "text": text} for rid, text in passages.items()]
    queries = [
        {"id": rid, "question": text, "gold": [rid], "type": "cross-lingual"}
        for rid, text in questions.items()
        if rid in passages
    ]
    return corpus, queries


def _crud_lede() -> tuple[list[dict], list[dict]]:
    corpus, queries = [], []
    path = DATA / "scale" / "crud-rag-news-1930.jsonl"
    for n, line in enumerate(path.open(encoding="utf-8")):
        row = json.loads(line)
        body = _DATELINE.sub("", row["text"].strip(), count=1)
        match = _SENTENCE.match(body)
        if not match:
            corpus.append({"id": row["id"], "title": "", "text": body})
            continue
        lede = match.group(1)
        corpus.append({"id": row["id"], "title": "", "text": body[len(lede) :].strip()})
        if n % 4 == 0:
            queries.append({"id": row["id"], "question": lede, "gold": [row["id"]], "type": "lede"})
    return corpus, queries


_GLOSSARY = "0x90-Appendix-A_Glossary.md"
_TERM = re.compile(r"^- \*\*(.+?)\*\*\s*([（(][^）)]*[）)])?")
_SECTION = re.compile(r"^## (V\d+\.\d+) (.+)$", re.M)
_HEADING = re.compile(r"^##? ", re.M)


def _asvs_terms() -> tuple[list[dict], list[dict]]:
    def entries(language: str) -> list[str]:
        text = (ASVS / f"{language}-md" / _GLOSSARY).read_text(encoding="utf-8")
        return [line for line in text.splitlines() if line.startswith("- **")]

    english, chinese = entries("en"), entries("zh-cn")
    corpus = [{"id": f"t{n}", "title": "", "text": line[2:]} for n, line in enumerate(chinese)]
    queries = []
    for n, line in enumerate(english[: len(chinese)]):
        term = _TERM.match(line)
        if term:
            question = " ".join(x for x in term.groups() if x)
            queries.append({"id": f"t{n}", "question": question, "gold": [f"t{n}"], "type": "term"})
    return corpus, queries


def _asvs_sections() -> tuple[list[dict], list[dict]]:
    def sections(language: str) -> dict[str, tuple[str, str]]:
        out = {}
        for path in sorted((ASVS / f"{language}-md").glob("0x*.md")):
            text = path.read_text(encoding="utf-8")
            for here in _SECTION.finditer(text):
                after = _HEADING.search(text, here.end())
                body = text[here.end() : after.start() if after else len(text)]
                out[here.group(1)] = (here.group(2).strip(), _LINK.sub("", body).strip())
        return out

    english, chinese = sections("en"), sections("zh-cn")
    corpus = [{"id": sid, "title": "", "text": body} for sid, (_, body) in chinese.items() if body]
    queries = [
        {"id": sid, "question": heading, "gold": [sid], "type": "section"}
        for sid, (heading, _) in english.items()
        if chinese.get(sid, ("", ""))[1]
    ]
    return corpus, queries


def _cwe_names() -> tuple[list[dict], list[dict]]:
    corpus, queries = [], []
    with (DATA / "cwe" / "1000.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["Description"].strip()]
    for n, r in enumerate(rows):
        cid = f"CWE-{r['CWE-ID']}"
        text = " ".join(x for x in (r["Description"], r["Extended Description"]) if x.strip())
        corpus.append({"id": cid, "title": "", "text": text})
        if n % 2 == 0:
            queries.append({"id": cid, "question": r["Name"], "gold": [cid], "type": "name"})
    return corpus, queries


DEV_SETS: dict[str, Callable[[], tuple[list[dict], list[dict]]]] = {
    "asvs-en2zh": lambda: _asvs_pair("en", "zh-cn"),
    "asvs-zh2en": lambda: _asvs_pair("zh-cn", "en"),
    "asvs-terms": _asvs_terms,
    "asvs-sections": _asvs_sections,
    "crud-lede": _crud_lede,
    "cwe-names": _cwe_names,
}


def write_dev_set(name: str, folder: Path) -> Path:
    """Write the dev set `name` under `folder` and return its directory."""
    corpus, queries = DEV_SETS[name]()
    out = folder / name
    out.mkdir(parents=True, exist_ok=True)
    for file, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        with (out / file).open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return out
