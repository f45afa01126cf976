"""Retrieval quality benchmark (issue 4), offline: each strategy alone, their RRF fusion, and `ask`.

    python benchmarks/bench_quality.py [--sets hotpotqa-100,multihop-rag-500] [--ask-queries N]

On ../shared/data/eval/* (corpus.jsonl + queries.jsonl with gold corpus ids): Recall@2/5/10
(share of a query's gold passages in the top k), MRR@10 and Success@5, for every strategy alone,
for the fusion of all six, and for `ask` (evidence pooled over its rounds, in the order found).
For multihop-rag's null queries (no gold), how often `ask` answers "not found".
Prints a table and writes benchmarks/results/quality.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "data" / "eval"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from core.config import Settings  # noqa: E402
from core.search import STRATEGIES  # noqa: E402
from core.service import KnowledgeService  # noqa: E402

GOALS = {"hotpotqa-100": "R@5 >= 0.82, MRR@10 >= 0.90", "multihop-rag-500": "R@5 >= 0.78"}


def metrics(ranked: list[list[str]], gold: list[list[str]]) -> dict[str, float]:
    """Recall@2/5/10, MRR@10 and Success@5 over queries that have gold passages."""
    rows = [(r, set(g)) for r, g in zip(ranked, gold, strict=True) if g]
    out: dict[str, float] = {}
    for k in (2, 5, 10):
        out[f"R@{k}"] = sum(len(set(r[:k]) & g) / len(g) for r, g in rows) / len(rows)
    mrr = 0.0
    for r, g in rows:
        mrr += next((1 / i for i, d in enumerate(r[:10], 1) if d in g), 0.0)
    out["MRR@10"] = mrr / len(rows)
    out["S@5"] = sum(bool(set(r[:5]) & g) for r, g in rows) / len(rows)
    return {k: round(v, 3) for k, v in out.items()}


def _documents(hits) -> list[str]:  # noqa: ANN001
    return list(dict.fromkeys(h.document for h in hits))


def bench_set(name: str, ask_queries: int) -> list[dict]:
    folder = EVAL / name
    queries = [
        json.loads(x) for x in (folder / "queries.jsonl").open(encoding="utf-8") if x.strip()
    ]
    gold = [q.get("gold") or [] for q in queries]
    questions = [q["question"] for q in queries]
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-quality-") as tmp,
        KnowledgeService(Settings(home=Path(tmp))) as svc,
    ):
        svc.create_kb("eval", mode="graph")
        start = time.perf_counter()
        svc.add("eval", [folder / "corpus.jsonl"])
        print(f"{name}: built in {time.perf_counter() - start:.0f}s", flush=True)
        for strategies in [(s,) for s in STRATEGIES] + [STRATEGIES]:
            label = strategies[0] if len(strategies) == 1 else "rrf(all six)"
            start = time.perf_counter()
            ranked = []
            for i in range(0, len(questions), 32):
                hits = svc.search_many(
                    questions[i : i + 32], ["eval"], top_k=10, strategies=strategies
                )
                ranked += [_documents(h) for h in hits]
            ms = (time.perf_counter() - start) * 1000 / len(questions)
            rows.append(
                {
                    "set": name,
                    "method": label,
                    **metrics(ranked, gold),
                    "ms_per_query": round(ms, 1),
                }
            )
            print(rows[-1], flush=True)
        if ask_queries:
            picked = [i for i, g in enumerate(gold) if g][:ask_queries]
            ranked, found = [], 0
            start = time.perf_counter()
            for i in picked:
                result = svc.ask(questions[i], ["eval"], max_rounds=3)
                ranked.append(_documents(result.evidence))
                found += result.answer.found
            ms = (time.perf_counter() - start) * 1000 / len(picked)
            rows.append(
                {
                    "set": name,
                    "method": f"ask (3 rounds, {len(picked)} queries)",
                    **metrics(ranked, [gold[i] for i in picked]),
                    "answered": round(found / len(picked), 3),
                    "ms_per_query": round(ms, 1),
                }
            )
            print(rows[-1], flush=True)
            nulls = [i for i, q in enumerate(queries) if q.get("type") == "null_query"]
            if nulls:
                said = sum(not svc.ask(questions[i], ["eval"]).answer.found for i in nulls)
                rows.append(
                    {
                        "set": name,
                        "method": f"ask on {len(nulls)} null queries",
                        "not_found_share": round(said / len(nulls), 3),
                    }
                )
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="hotpotqa-100,multihop-rag-500,cmrc2018-500")
    parser.add_argument("--ask-queries", type=int, default=100)
    args = parser.parse_args()
    rows = []
    for name in args.sets.split(","):
        if not (EVAL / name).exists():
            print(f"skipped {name}: {EVAL / name} is missing")
            continue
        rows += bench_set(name, args.ask_queries)
    print(f"\n{'set':18} {'method':34} R@2   R@5   R@10  MRR@10 S@5   ms/q")
    for r in rows:
        if "R@5" in r:
            print(
                f"{r['set']:18} {r['method']:34} {r['R@2']:.3f} {r['R@5']:.3f} {r['R@10']:.3f}"
                f" {r['MRR@10']:.3f}  {r['S@5']:.3f} {r['ms_per_query']}"
            )
        else:
            print(f"{r['set']:18} {r['method']:34} not-found share {r['not_found_share']}")
    for name, goal in GOALS.items():
        print(f"goal {name}: {goal}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "quality.json"
    out.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
