"""Offline answers, sentence by sentence (issue 17): do they quote whole sentences that hold the
answer, never headings, with balanced markup?

    python benchmarks/bench_answer.py [--sets sample,cmrc,asvs] [--limit N]
                                      [--before PATH] [--label NAME]

Each set is built into a fresh knowledge base (offline, built-in embedder) and every question
is searched once, as the recall page does it (the default offline search, top 10), then
answered from those hits by `grounded_answer` without an LLM twice: `search`, as the recall
page asks (no aspects), and `agent`, as `ask`'s answer node asks (the offline plan's aspects,
core/ask/nodes.py; the hits of the question's own search stand for the merged evidence).
Retrieval is the product's own and the same for every run, so two runs differ only by the
answer code. `--before PATH` loads the answer module from a
copy of an older core/answer.py (the figures "before" a change); results go into
benchmarks/results/answer.json under the run's label (`before` with --before, else `after`),
keeping the other labels there.

Sets:
- `sample`: the shipped sample documents (app/samples/*.md) and 18 questions written for this
  benchmark, each with a reference span copied from the sample (below, not in product code).
- `cmrc`: the 500 questions of ../shared/data/eval/cmrc2018-500 over its 137 passages (a real
  search over all of them, so the other passages are the distractors), with the reference
  answers of the set (any of them counts).
- `asvs`: the Chinese OWASP ASVS 4.0.3 chapters V1-V14 (../shared/data/docs/asvs-4.0.3/zh-cn-md:
  headings, requirement tables, bold, links). One question per requirement section, written
  from its name ("会话绑定有哪些要求？"); a reference span is any requirement description of
  that section in the set's CSV. The questions are derived, not asked by users: the set is
  here for headings and markup in real documents more than for its answer rate.

Metrics, per set:
- `contains`: the share of questions one of whose answer lines contains a reference span, both
  compared without spaces, punctuation or markup (a not-found answer contains nothing).
  Compared line by line, so two fragments on adjacent lines do not add up to a sentence.
- `found`: the share answered at all.
- `headings`: the share of cited answer lines that are a heading of the corpus (a Markdown `#`
  line of the source files, its number included or not) or a table's header row. Goal 0.
- `cut`: the share of cited lines that stop mid-sentence (the last character before `[n]` is a
  letter, digit or a joining word like 和/、/，, and the line is not a table row).
- `markup`: the share of answers with unbalanced markup in a line (an odd number of backticks
  or of `**`, or a bracket left open) or doubled punctuation ("？：", "。：") that the cited
  passages do not have themselves.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from zhixing.core.ask.nodes import MAX_ASPECTS  # noqa: E402
from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.search.query_terms import split_query  # noqa: E402
from zhixing.core.service import KnowledgeService  # noqa: E402

SAMPLES = sorted((ROOT / "app" / "samples").glob("*.md"))
CMRC = DATA / "eval" / "cmrc2018-500"
ASVS = DATA / "docs" / "asvs-4.0.3"
TOP_K = 10  # what the recall page asks for

# (question, reference span): spans copied from app/samples/*.md.
SAMPLE_QUESTIONS = [
    ("会话超时应该设置多久？", "空闲会话在 15 分钟后失效"),
    ("SQL注入如何防护", "访问数据库必须使用 PreparedStatement 参数化查询"),
    ("会话 Cookie 需要设置哪些属性？", "会话 Cookie 设置 HttpOnly、Secure 和 SameSite 属性"),
    ("密码应该如何存储？", "密码必须使用 bcrypt、scrypt 或 Argon2id 等自适应哈希算法加盐存储"),
    ("日志需要保存多久？", "日志至少保存 180 天"),
    ("日志中禁止出现哪些内容？", "日志中禁止出现密码、会话标识、令牌和完整的身份证号"),
    ("如何防止跨站脚本攻击？", "输出到 HTML 页面的数据必须按上下文编码"),
    ("反序列化有什么要求？", "禁止对不可信数据使用 Java 原生反序列化（ObjectInputStream）"),
    ("输入验证应该怎么做？", "验证采用白名单"),
    ("MyBatis 中允许使用哪种占位符？", "使用 MyBatis 时只允许 `#{}` 占位符"),
    ("bcrypt 的工作因子至少是多少？", "bcrypt 的工作因子不低于 10"),
    ("How long until idle sessions expire?", "Idle sessions expire after 15 minutes"),
    (
        "How many failed logins lock an account?",
        "Accounts lock for 15 minutes after 5 failed logins",
    ),
    ("Which TLS version must connections use?", "Use TLS 1.2 or later for every connection"),
    ("Where should encryption keys be kept?", "Keys live in a key management service"),
    ("Which Log4j versions are forbidden?", "Log4j versions before 2.17.1 are forbidden"),
    ("How should uploaded files be checked?", "Check the file type by content, not by extension"),
    ("What should the user see when an error occurs?", "show the user a generic message"),
]

_MARKER = re.compile(r"\s*\[\d+\]")
_ATX = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_NUMBER = re.compile(r"^(?:V?\d+(?:\.\d+)*|第.{1,4}[章节条])\s*")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")
_LINK = re.compile(r"\s*\(\[[^\]]*\]\([^)]*\)\)")
_CUT_END = re.compile(r"[\w、，,和与及或的]$")
_DOUBLED = re.compile(r"[。！？；：，?!;:,][：:，,。]|[?？][.。]")
_PAIRS = ("（）", "()", "[]", "「」", "《》", "【】")


def norm(text: str) -> str:
    """Compare text without case, spaces, punctuation or markup: letters, digits and CJK only."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in text if c.isalnum())


@dataclass
class QuestionSet:
    name: str
    sources: list[Path]
    questions: list[tuple[str, list[str]]]  # question, reference spans (any one counts)
    headings: set[str]  # normalized headings and table header rows of the corpus


def _markdown_headings(paths: Sequence[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for line, after in zip(lines, [*lines[1:], ""], strict=True):
            if match := _ATX.match(line):
                title = _LINK.sub("", match.group(1))
                found |= {norm(title), norm(_NUMBER.sub("", title))}
            elif line.lstrip().startswith("|") and _SEPARATOR.match(after):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                found.add(norm(" ".join(c for c in cells if c)))
    return {h for h in found if h}


def sample_set(limit: int | None) -> QuestionSet:
    questions = [(q, [span]) for q, span in SAMPLE_QUESTIONS][:limit]
    return QuestionSet("sample", SAMPLES, questions, _markdown_headings(SAMPLES))


def cmrc_set(limit: int | None) -> QuestionSet:
    rows = [json.loads(x) for x in (CMRC / "queries.jsonl").open(encoding="utf-8") if x.strip()]
    questions = [(r["question"], list(dict.fromkeys(r["answers"]))) for r in rows][:limit]
    # The passages are plain prose without headings.
    return QuestionSet("cmrc", [CMRC / "corpus.jsonl"], questions, set())


def asvs_set(limit: int | None) -> QuestionSet:
    chapters = sorted(
        p for p in (ASVS / "zh-cn-md").glob("0x*-V*.md") if re.match(r"0x\d\d-V\d+-", p.name)
    )
    sections: dict[str, list[str]] = {}
    with (ASVS / "ASVS_4.0.3-zh-cn.csv").open(encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            description = _LINK.sub("", row["req_description"]).strip()
            if description and row["section_name"].strip():
                sections.setdefault(row["section_name"].strip(), []).append(description)
    questions = [(f"{name}有哪些要求？", spans) for name, spans in sections.items()][:limit]
    return QuestionSet("asvs", chapters, questions, _markdown_headings(chapters))


SETS: dict[str, Callable[[int | None], QuestionSet]] = {
    "sample": sample_set,
    "cmrc": cmrc_set,
    "asvs": asvs_set,
}


def _cited_lines(answer: str) -> list[str]:
    """The answer's lines that cite a hit, without the list marker and the [n] markers."""
    return [
        _MARKER.sub("", line).strip().removeprefix("- ").strip()
        for line in answer.splitlines()
        if _MARKER.search(line)
    ]


def _is_heading(line: str, headings: set[str]) -> bool:
    key = norm(line)
    if key in headings:
        return True
    # A heading glued to the sentence after it ("4 会话管理 用户登录后……"): numbered ones only,
    # as a sentence may well begin with a plain heading's words.
    return bool(_NUMBER.match(line)) and any(
        len(h) > 2 and key.startswith(h) and h != norm(_NUMBER.sub("", h)) for h in headings
    )


def _unbalanced(line: str) -> bool:
    if line.count("`") % 2 or line.count("**") % 2:
        return True
    return any(line.count(a) != line.count(b) for a, b in _PAIRS)


def _doubled(answer: str, sources: str) -> bool:
    """Doubled punctuation the answer wrote: a pair the cited passages do not have themselves
    (cmrc's passages keep "（克罗地亚语：，）" where a foreign name was removed)."""
    text = _MARKER.sub("", answer)
    return any(m.group() not in sources for m in _DOUBLED.finditer(text))


def score(qs: QuestionSet, answers: Sequence[Any], hits: Sequence[Sequence[Any]]) -> dict[str, Any]:
    contains = found = markup = lines = headings = cut = 0
    examples: list[dict[str, str]] = []
    for (question, spans), answer, found_hits in zip(qs.questions, answers, hits, strict=True):
        cited = _cited_lines(answer.answer) if answer.found else []
        keys = [norm(s) for s in spans]
        hit = any(k and k in norm(line) for line in cited for k in keys)
        contains += hit
        found += bool(answer.found)
        sources = "\n".join(h.text for h in found_hits)
        markup += any(_unbalanced(x) for x in cited) or _doubled(answer.answer, sources)
        lines += len(cited)
        headings += sum(_is_heading(x, qs.headings) for x in cited)
        cut += sum(bool(_CUT_END.search(x)) and "|" not in x for x in cited)
        # Misses are kept for the sample only: the other sets' text stays in ../shared/data.
        if not hit and len(examples) < 5 and qs.name == "sample":
            examples.append({"question": question, "answer": answer.answer[:300]})
    n = max(len(qs.questions), 1)
    return {
        "questions": len(qs.questions),
        "contains": round(contains / n, 3),
        "found": round(found / n, 3),
        "headings": round(headings / max(lines, 1), 3),
        "cut": round(cut / max(lines, 1), 3),
        "markup": round(markup / n, 3),
        "lines": lines,
        "misses": examples,
    }


def run_set(qs: QuestionSet, answer: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    """Build the set's knowledge base, search every question, answer offline from the hits:
    once as the recall page does (no aspects), once as `ask` does (the offline plan's aspects)."""
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-answer-") as tmp,
        KnowledgeService(Settings(home=Path(tmp))) as svc,
    ):
        svc.kbs.create("kb", mode="index")
        started = time.perf_counter()
        svc.builds.add("kb", qs.sources)
        build_s = time.perf_counter() - started
        questions = [q for q, _ in qs.questions]
        hits = [
            h
            for i in range(0, len(questions), 32)
            for h in svc.search.many(questions[i : i + 32], ["kb"], top_k=TOP_K)
        ]
    out: dict[str, dict[str, Any]] = {}
    for mode in ("search", "agent"):
        started = time.perf_counter()
        answers = [
            answer(q, h, aspects=_aspects(q) if mode == "agent" else ())
            for q, h in zip(questions, hits, strict=True)
        ]
        elapsed_ms = (time.perf_counter() - started) * 1000 / max(len(questions), 1)
        out[mode] = score(qs, answers, hits) | {"answer_ms": round(elapsed_ms, 1)}
    out["search"]["build_s"] = round(build_s, 1)
    return out


def _aspects(question: str) -> list[str]:
    """The aspects the offline `plan` node writes (core/ask/nodes.py)."""
    return split_query(question, max_parts=MAX_ASPECTS) or [question]


def load_answer(before: Path | None) -> Callable[..., Any]:
    """`grounded_answer` of core/answer.py, or of the module copied to `before`."""
    if before is None:
        from zhixing.core.answer import grounded_answer

        return grounded_answer
    spec = importlib.util.spec_from_file_location("answer_before", before)
    assert spec is not None and spec.loader is not None, f"cannot load {before}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module.grounded_answer  # type: ignore[no-any-return]


COLUMNS = ("questions", "contains", "found", "headings", "cut", "markup", "answer_ms")


def print_table(results: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> None:
    print(f"{'run':<8} {'set':<8} {'as':<7}" + " ".join(f"{c:>9}" for c in COLUMNS))
    for label, sets in results.items():
        for name, modes in sets.items():
            for mode, row in modes.items():
                cells = " ".join(f"{row.get(c, ''):>9}" for c in COLUMNS)
                print(f"{label:<8} {name:<8} {mode:<7}{cells}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sets", default=",".join(SETS), help="comma-separated: " + ", ".join(SETS)
    )
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each set")
    parser.add_argument("--before", type=Path, help="a copy of an older core/answer.py")
    parser.add_argument("--label", help="the run's name in answer.json (default before/after)")
    parser.add_argument("--out", type=Path, default=RESULTS / "answer.json")
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        parser.error(f"unknown set {', '.join(unknown)}; choose from {', '.join(SETS)}")
    label = args.label or ("before" if args.before else "after")
    answer = load_answer(args.before)
    results: dict[str, Any] = {}
    for name in names:
        results[name] = run_set(SETS[name](args.limit), answer)
        for mode, row in results[name].items():
            print(f"{label} {name} {mode}: {json.dumps({c: row[c] for c in COLUMNS})}", flush=True)
    stored: dict[str, Any] = {}
    if args.out.exists():
        stored = json.loads(args.out.read_text(encoding="utf-8"))
    stored.setdefault(label, {}).update(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stored, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print_table({k: v for k, v in stored.items() if isinstance(v, dict)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
