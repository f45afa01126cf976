"""Query cost and latency benchmark (issue 4): LLM calls per `ask`, and offline latency.

    python benchmarks/bench_query.py [--corpus PATH] [--latency S] [--questions N]

1. Through the project's fake OpenAI-compatible server with an injected latency per call: LLM
   calls per 3-round `ask` (all, and per round), and its wall time against the calls on the
   critical path × latency.
2. Offline, on a knowledge base built from a corpus: `search` with all six strategies and a
   3-round `ask`, p50 and p95.
Prints a table and writes benchmarks/results/query.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from core.config import Settings  # noqa: E402
from core.embed import BuiltinEmbedder  # noqa: E402
from core.service import KnowledgeService  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402


def _questions(path: Path, n: int) -> list[str]:
    lines = [json.loads(x) for x in path.open(encoding="utf-8") if x.strip()]
    return [q["question"] for q in lines if q.get("gold")][:n]


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1)))]


def bench_llm_ask(corpus: Path, questions: list[str], latency: float, embedder) -> dict:  # noqa: ANN001
    with tempfile.TemporaryDirectory(prefix="zhixing-query-") as tmp:
        home = Path(tmp)
        with KnowledgeService(Settings(home=home), embedder=embedder) as svc:  # built offline
            svc.create_kb("kb")
            svc.add("kb", [corpus])
        with FakeOpenAI(latency_s=latency) as fake:
            settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="bench")
            with KnowledgeService(settings, embedder=embedder) as svc:
                calls, rounds, walls = [], [], []
                for question in questions:
                    fake.reset()
                    start = time.perf_counter()
                    result = svc.ask(question, ["kb"], max_rounds=3)
                    walls.append(time.perf_counter() - start)
                    calls.append(fake.chat_count)
                    rounds.append(len(result.rounds))
    per_round = sum(calls) / max(sum(rounds), 1)
    return {
        "benchmark": "llm_ask_3_rounds",
        "questions": len(questions),
        "calls_per_ask": round(statistics.mean(calls), 2),
        "calls_per_round": round(per_round, 2),
        "rounds_per_ask": round(statistics.mean(rounds), 2),
        "wall_s_p50": round(statistics.median(walls), 2),
        "wall_per_call_s": round(
            statistics.median(w / c for w, c in zip(walls, calls, strict=True) if c), 3
        ),
        "goal": "<= 2 calls/round on the critical path, <= 7 per ask",
        "met": statistics.mean(calls) <= 7,
    }


def bench_offline(corpus: Path, questions: list[str], embedder) -> list[dict]:  # noqa: ANN001
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-query-") as tmp,
        KnowledgeService(Settings(home=Path(tmp)), embedder=embedder) as svc,
    ):
        svc.create_kb("kb", mode="graph")
        svc.add("kb", [corpus])
        svc.search(questions[0], ["kb"])  # warm-up
        search_ms, ask_ms = [], []
        for q in questions:
            start = time.perf_counter()
            svc.search(q, ["kb"], top_k=10)
            search_ms.append((time.perf_counter() - start) * 1000)
        for q in questions[:30]:
            start = time.perf_counter()
            svc.ask(q, ["kb"], max_rounds=3)
            ask_ms.append((time.perf_counter() - start) * 1000)
    return [
        {
            "benchmark": "offline_search_all_six",
            "queries": len(search_ms),
            "p50_ms": round(statistics.median(search_ms), 1),
            "p95_ms": round(_p(search_ms, 0.95), 1),
            "goal": "p50 <= 300 ms",
            "met": statistics.median(search_ms) <= 300,
        },
        {
            "benchmark": "offline_ask_3_rounds",
            "queries": len(ask_ms),
            "p50_ms": round(statistics.median(ask_ms), 1),
            "p95_ms": round(_p(ask_ms, 0.95), 1),
            "goal": "p50 <= 2000 ms",
            "met": statistics.median(ask_ms) <= 2000,
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="hotpotqa-100", help="an eval set under shared/data/eval")
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--questions", type=int, default=10)
    args = parser.parse_args()
    folder = DATA / "eval" / args.set
    if not folder.exists():
        raise SystemExit(f"{folder} is missing")
    embedder = BuiltinEmbedder()
    questions = _questions(folder / "queries.jsonl", 100)
    rows = [
        bench_llm_ask(folder / "corpus.jsonl", questions[: args.questions], args.latency, embedder)
    ]
    rows += bench_offline(folder / "corpus.jsonl", questions, embedder)
    print(f"{'benchmark':26} {'met':4} result")
    for row in rows:
        result = ", ".join(
            f"{k}={v}" for k, v in row.items() if k not in ("benchmark", "goal", "met")
        )
        print(
            f"{row['benchmark']:26} {'yes' if row['met'] else 'NO':4} {result}  (goal {row['goal']})"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "query.json"
    out.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
