"""Enrichment benchmark (issue 3): LLM calls per chunk, concurrency, rebuild cost, offline graph.

    python benchmarks/bench_enrich.py [--chunks N] [--latency S] [--skip-offline]

Against the project's fake OpenAI-compatible server with an injected latency per call: for each
build mode, LLM calls per chunk (goal: exactly 1, plus repairs), the extraction wall time against
the ideal `calls × latency / concurrency` (goal ≤ 1.25×), and the calls a rebuild makes (goal 0).
Offline: a graph-mode build of the OWASP cheat sheets (chunks per second) and the graph it makes.
Prints a table and writes benchmarks/results/enrich.json.
"""

from __future__ import annotations

import argparse
import json
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

CONCURRENCY = 8


def _corpus(folder: Path, n: int) -> Path:
    """N one-chunk documents of varied security prose (so that no two prompts are cached)."""
    topics = [
        "SQL injection",
        "cross-site scripting",
        "session fixation",
        "password storage",
        "TLS configuration",
        "access control",
        "logging",
        "file upload",
    ]
    path = folder / "chunks.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            topic = topics[i % len(topics)]
            text = (
                f"Requirement {i}: applications must defend against {topic}. "
                f"Developers should review {topic} controls in release {i}.\n"
                f"Testers must verify the {topic} mitigation with case {i * 7}."
            )
            out.write(json.dumps({"id": f"c{i}", "title": f"Control {i}", "text": text}) + "\n")
    return path


def bench_llm_mode(mode: str, n: int, latency: float, embedder: BuiltinEmbedder) -> dict:
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-enrich-") as tmp,
        FakeOpenAI(latency_s=latency) as fake,
    ):
        corpus = _corpus(Path(tmp), n)
        settings = Settings(
            home=Path(tmp) / "home",
            openai_base_url=fake.url,
            openai_api_key="bench",
            llm_concurrency=CONCURRENCY,
        )
        with KnowledgeService(settings, embedder=embedder) as svc:
            svc.create_kb("kb", mode=mode)
            start = time.perf_counter()
            report = svc.add("kb", [corpus])
            wall = time.perf_counter() - start
            calls = fake.chat_count
            chunks = report.chunks
            repairs = svc.llm.stats.repairs
            fake.reset()
            # A rebuild from scratch: the knowledge base goes, the LLM cache stays.
            svc.delete_kb("kb")
            svc.create_kb("kb", mode=mode)
            rebuild = svc.add("kb", [corpus])
            rebuild_calls = fake.chat_count
    ideal = calls * latency / CONCURRENCY
    ratio = report.extract_seconds / ideal if ideal else float("inf")
    per_chunk = (calls - repairs) / chunks if chunks else 0
    return {
        "benchmark": f"llm_{mode}_mode",
        "chunks": chunks,
        "calls": calls,
        "repairs": repairs,
        "calls_per_chunk": round(per_chunk, 3),
        "extract_s": round(report.extract_seconds, 2),
        "ideal_s": round(ideal, 2),
        "ratio_to_ideal": round(ratio, 3),
        "build_wall_s": round(wall, 2),
        "rebuild_calls": rebuild_calls,
        "rebuild_chunks": rebuild.chunks,
        "goal": "1 call/chunk, <= 1.25x ideal, 0 on rebuild",
        "met": per_chunk == 1 and ratio <= 1.25 and rebuild_calls == 0,
    }


def bench_offline_graph(embedder: BuiltinEmbedder) -> dict | None:
    folder = DATA / "docs" / "owasp-cheatsheets"
    if not folder.exists():
        print(f"skipped the offline graph benchmark: {folder} is missing")
        return None
    with tempfile.TemporaryDirectory(prefix="zhixing-graph-") as tmp:
        svc = KnowledgeService(Settings(home=Path(tmp)), embedder=embedder)
        try:
            svc.create_kb("owasp", mode="graph")
            start = time.perf_counter()
            report = svc.add("owasp", [folder])
            wall = time.perf_counter() - start
            stats = svc.graph_stats("owasp")
            linked = svc.catalog.db.execute(
                "SELECT COUNT(*) FROM entities e WHERE EXISTS (SELECT 1 FROM relations r"
                " WHERE r.source_id = e.id OR r.target_id = e.id)"
            ).fetchone()[0]
        finally:
            svc.close()
    return {
        "benchmark": "offline_graph_owasp_cheatsheets",
        "documents": len(report.added),
        "chunks": report.chunks,
        "questions": report.questions,
        "seconds": round(wall, 1),
        "chunks_per_s": round(report.chunks / wall, 1),
        "extract_s": round(report.extract_seconds, 1),
        "entities": stats["entities"],
        "relations": stats["relations"],
        "linked_share": round(linked / stats["entities"], 3) if stats["entities"] else 0,
        "goal": "informational",
        "met": True,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--skip-offline", action="store_true")
    args = parser.parse_args()
    embedder = BuiltinEmbedder()
    rows = [
        bench_llm_mode(mode, args.chunks, args.latency, embedder) for mode in ("index", "graph")
    ]
    if not args.skip_offline and (row := bench_offline_graph(embedder)):
        rows.append(row)
    print(f"{'benchmark':34} {'met':4} result")
    for row in rows:
        result = ", ".join(
            f"{k}={v}" for k, v in row.items() if k not in ("benchmark", "goal", "met")
        )
        print(f"{row['benchmark']:34} {'yes' if row['met'] else 'NO':4} {result}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "enrich.json"
    out.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
