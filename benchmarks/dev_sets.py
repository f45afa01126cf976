"""Retrieval dev sets made from ../shared/data at run time, in the eval sets' format.

Each set is written to a temporary folder as corpus.jsonl ({"id","title","text"}) and
queries.jsonl ({"id","question","gold":[ids],"type"}); nothing is copied into the project.

- asvs-en2zh: each English ASVS 4.0.3 requirement asked of the Chinese requirements (one passage
  per requirement, no title); the gold is the same requirement id. Cross-lingual, EN -> ZH.
- asvs-zh2en: the reverse: each Chinese requirement asked of the English ones. ZH -> EN.
- crud-lede: Chinese news (CRUD-RAG, 1,930 articles): the article's first sentence is the
  question, the rest of the article (without that sentence) the passage; every fourth article
  with a first sentence is asked (472 questions) over all 1,930. Chinese, known-item.
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
