"""The real model beside offline (issue 34): does a model add to what Zhixing finds without one?

    python benchmarks/bench_llm.py [--sets hotpotqa-100,multihop-rag-500,cmrc2018-500]
                                   [--sample N] [--out PATH]

Needs `make real-model` (tests/real_model_setup.py): llama.cpp's `llama-server` with
Qwen2.5-Coder-0.5B-Instruct, started here on a free port with one slot on one thread (as
tests/real_llm.py starts it). Each shared eval set (../shared/data/eval: corpus.jsonl and
queries.jsonl with gold passages and answers) is built once into a fresh index-mode knowledge
base (offline, built-in embedder); then N questions of it (every len/N-th with an answer, so
the sample spreads over the set) are asked with `ask` twice: offline, and through the model.

Per set and path:
- `contains`: share of answers holding one of the gold answers (Chinese: as characters, without
  spaces or punctuation; otherwise as whole words, without case); `EM` and `F1` of the answer against the gold answers (SQuAD-style: tokens for
  English, characters for Chinese; the best over the gold answers). A not-found answer is empty,
  and so is the not-found sentence an answer gives for one of its aspects.
- `R@5`, `MRR@10`: the gold passages among `ask`'s merged evidence (its documents, in order).
- `own_words`: `contains` over the model's own words only: its answer without the sentences
  offline would quote that stand under it (core/answer.py, "From the sources:"); offline, the
  same as `contains`.
- `by_model`: share of answers the model wrote itself (method `llm`), not the extractive one.
- `calls`, `prompt_tok`, `completion_tok`: per question, from the server's log and /metrics.
- `s/q`: wall seconds per question.

Prints a table and writes JSON (benchmarks/results/llm.json by default).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "data" / "eval"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from tests.real_llm import RealServer, environment, missing, serve  # noqa: E402
from zhixing.core.answer import QUOTES_EN, QUOTES_ZH  # noqa: E402
from zhixing.core.answer_reply import NOT_FOUND_EN, NOT_FOUND_ZH  # noqa: E402
from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.service import KnowledgeService  # noqa: E402

SETS = ("hotpotqa-100", "multihop-rag-500", "cmrc2018-500")
_CJK = re.compile(r"[\u3400-\u9fff]")


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in text if c.isalnum())


def contains(text: str, gold: str) -> bool:
    """The gold answer in the answer: as characters for Chinese, as whole words otherwise (a
    gold "no" is not in "not known")."""
    if _CJK.search(gold):
        return bool(norm(gold)) and norm(gold) in norm(text)
    want = tokens(gold)
    said = tokens(text)
    return bool(want) and any(said[i : i + len(want)] == want for i in range(len(said)))


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    if _CJK.search(text):
        return [c for c in text if c.isalnum()]
    words = re.findall(r"\w+", text)
    return [w for w in words if w not in ("a", "an", "the")]


def f1(answer: str, gold: str) -> float:
    said, want = tokens(answer), tokens(gold)
    common = sum((Counter(said) & Counter(want)).values())
    if not said or not want or not common:
        return 0.0
    precision, recall = common / len(said), common / len(want)
    return 2 * precision * recall / (precision + recall)


def sample(name: str, n: int) -> list[dict]:
    rows = [json.loads(x) for x in (EVAL / name / "queries.jsonl").open(encoding="utf-8")]
    rows = [r for r in rows if r.get("answers") and r.get("gold")]
    step = max(1, len(rows) // n)
    return rows[::step][:n]


def ask_one(svc: KnowledgeService, row: dict, server: RealServer | None) -> dict[str, Any]:
    since = server.mark() if server else None
    started = time.monotonic()
    result = svc.search.ask(row["question"], ["kb"])
    seconds = time.monotonic() - started
    answer = result.answer.to_json()
    # An aspect the answer found nothing for says so in the not-found sentence, whose "No" is
    # not an answer to a yes/no question (multihop's gold "no" was counted in it before).
    text = answer["answer"] if answer["found"] else ""
    text = text.replace(NOT_FOUND_EN, "").replace(NOT_FOUND_ZH, "")
    own = re.split(f"\n\n(?:{re.escape(QUOTES_ZH)}|{re.escape(QUOTES_EN)})\n\n", text)[0]
    documents = list(dict.fromkeys(h.document for h in result.evidence))
    gold = set(row["gold"])
    golds = [str(a) for a in row["answers"]]
    out = {
        "id": row["id"],
        "answer": text[:400],
        "method": answer.get("method", ""),
        "note": answer.get("note", ""),  # why a model's path gave the hits' sentences
        "contains": any(contains(text, g) for g in golds),
        "own_words": any(contains(own, g) for g in golds),
        "EM": max(norm(text) == norm(g) for g in golds),
        "F1": max(f1(text, g) for g in golds),
        "R@5": len(set(documents[:5]) & gold) / len(gold),
        "MRR@10": next((1 / i for i, d in enumerate(documents[:10], 1) if d in gold), 0.0),
        "seconds": seconds,
    }
    if server and since:
        used = server.usage(since)
        out |= {k: used[k] for k in ("calls", "prompt_tokens", "completion_tokens")}
    return out


def mean(rows: list[dict], key: str) -> float:
    return round(sum(float(r.get(key, 0)) for r in rows) / max(1, len(rows)), 3)


def run_set(name: str, n: int, server: RealServer, scratch: Path) -> dict[str, Any]:
    home = scratch / name
    rows = sample(name, n)
    with KnowledgeService(Settings(home=home)) as svc:
        svc.kbs.create("kb", mode="index")
        svc.builds.add("kb", [EVAL / name / "corpus.jsonl"])
        offline = [ask_one(svc, r, None) for r in rows]
    model_settings = Settings.from_env({"ZHIXING_HOME": str(home), **environment(server)})
    with KnowledgeService(model_settings) as svc:
        model = [ask_one(svc, r, server) for r in rows]
    return {"questions": len(rows), "offline": offline, "model": model}


def summary(per_set: dict[str, Any]) -> list[dict[str, Any]]:
    table = []
    for name, got in per_set.items():
        for path in ("offline", "model"):
            rows = got[path]
            line: dict[str, Any] = {"set": name, "path": path, "n": len(rows)}
            for key in ("contains", "own_words", "EM", "F1", "R@5", "MRR@10"):
                line[key] = mean(rows, key)
            # How many answers the model wrote itself (the rest: its not-found gave way to
            # the extractive answer, or it was not asked).
            line["by_model"] = round(sum(r["method"] == "llm" for r in rows) / max(1, len(rows)), 3)
            line["calls"] = mean(rows, "calls")
            line["prompt_tok"] = mean(rows, "prompt_tokens")
            line["completion_tok"] = mean(rows, "completion_tokens")
            line["s/q"] = round(mean(rows, "seconds"), 1)
            table.append(line)
    return table


def print_table(table: list[dict[str, Any]]) -> None:
    keys = list(table[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for line in table:
        print("| " + " | ".join(str(line[k]) for k in keys) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--sample", type=int, default=3, help="questions per set (default 3)")
    parser.add_argument("--out", type=Path, default=RESULTS / "llm.json")
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(reason, file=sys.stderr)
        return 1
    per_set: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp) / "server.log") as server:
        for name in args.sets.split(","):
            per_set[name] = run_set(name, args.sample, server, Path(tmp))
            _write(args.out, per_set)  # each set as it ends: a long run interrupted keeps them
            print(f"{name}: done", file=sys.stderr)
    print_table(_write(args.out, per_set))
    return 0


def _write(out: Path, per_set: dict[str, Any]) -> list[dict[str, Any]]:
    table = summary(per_set)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"table": table, "sets": per_set}, indent=1, ensure_ascii=False),
        encoding="utf-8",
    )
    return table


if __name__ == "__main__":
    sys.exit(main())
