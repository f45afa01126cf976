"""Enrichment benchmark (issues 3 and 13): LLM calls per chunk and per role, the estimate.

    python benchmarks/bench_enrich.py [--chunks N] [--latency S] [--skip-offline]
        [--skip-roles | --roles-only] [--owasp N] [--cwe N] [--asvs N]
        [--responders names,contextual] [--skip-incremental]

Against the project's fake OpenAI-compatible server with an injected latency per call: for each
build mode, extraction calls per chunk (goal: exactly 1, plus repairs), the extraction wall time
against the ideal `calls × latency / concurrency` (goal ≤ 1.25×), and the calls a rebuild makes
(goal 0). Offline: a graph-mode build of the OWASP cheat sheets (chunks per second) and its graph.

Roles (issue 13): graph-mode builds of real documents whose entities repeat across chunks (the
first N OWASP cheat sheets, the first N CWE entries, the Chinese ASVS chapters), counting from
the fake's recorded requests the `chunk_knowledge`, `same_entity` and `summarize_description`
calls and the repairs, against the estimate made before the build (goal: within 20%). Two fake
responders: `names` (the fake's default: capitalized terms, one fixed description per name) and
`contextual` (the same names, each described by the chunk's line that names it, as a model
would; only then do descriptions grow long enough to be summarized). Also: the default rates fit
on the other corpora (leave-one-corpus-out), and a second half added to a knowledge base holding
the first (the estimate then uses the base's own history).
Prints tables and writes benchmarks/results/enrich.json (rows of earlier runs of other sections
are kept).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from tests.fake_openai import (  # noqa: E402
    _NUMBERED,
    FakeOpenAI,
    _prompt_text,
    _schema_of,
    default_responder,
)
from zhixing.core.build.estimate import DEFAULT_RATES, EXTRA_ROLES  # noqa: E402
from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.embed import BuiltinEmbedder  # noqa: E402
from zhixing.core.llm import PROMPTS  # noqa: E402
from zhixing.core.service import KnowledgeService  # noqa: E402

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


def _fake_settings(tmp: Path, fake: FakeOpenAI) -> Settings:
    """A home in `tmp` whose LLM is the fake endpoint, at the benchmark's concurrency."""
    return Settings(
        home=tmp / "home", openai_base_url=fake.url, openai_api_key="bench",
        llm_concurrency=CONCURRENCY,
    )  # fmt: skip


def bench_llm_mode(mode: str, n: int, latency: float, embedder: BuiltinEmbedder) -> dict:
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-enrich-") as tmp,
        FakeOpenAI(latency_s=latency) as fake,
    ):
        corpus = _corpus(Path(tmp), n)
        with KnowledgeService(_fake_settings(Path(tmp), fake), embedder=embedder) as svc:
            svc.kbs.create("kb", mode=mode)
            start = time.perf_counter()
            report = svc.builds.add("kb", [corpus])
            wall = time.perf_counter() - start
            calls = fake.chat_count
            chunks = report.chunks
            repairs = svc.llm.stats.repairs
            fake.reset()
            # A rebuild from scratch: the knowledge base goes, the LLM cache stays.
            svc.kbs.delete("kb")
            svc.kbs.create("kb", mode=mode)
            rebuild = svc.builds.add("kb", [corpus])
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
            svc.kbs.create("owasp", mode="graph")
            start = time.perf_counter()
            report = svc.builds.add("owasp", [folder])
            wall = time.perf_counter() - start
            stats = svc.graph.stats("owasp")
            linked = svc._home.catalog.db.execute(
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


# --- roles (issue 13): the calls a graph build makes per role, against the estimate ---------------

ROLE_OF_SCHEMA = {role.schema.__name__: name for name, role in PROMPTS.items()}
ROLE_COLUMNS = ("chunk_knowledge", *EXTRA_ROLES)
RESPONDERS = ("names", "contextual")


def contextual_responder(body: dict) -> dict | str:
    """The fake's default answer, each entity described by the first chunk line naming it."""
    answer = default_responder(body)
    if isinstance(answer, dict) and answer.get("entities"):
        lines = [t.strip() for _, t in _NUMBERED.findall(_prompt_text(body)) if t.strip()]
        for entity in answer["entities"]:
            line = next((x for x in lines if entity["name"] in x), "")
            entity["description"] = line[:200] or entity["description"]
    return answer


def _cwe_jsonl(folder: Path, n: int) -> list[Path]:
    """The first N entries of the CWE research view as a JSON-lines corpus, written to `folder`
    (a temporary folder: the data stays in ../shared/data), and its two halves."""
    csv.field_size_limit(1 << 30)
    rows = []
    with (DATA / "cwe" / "1000.csv").open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if len(rows) == n:
                break
            text = "\n\n".join(x for x in (row["Description"], row["Extended Description"]) if x)
            title = f"CWE-{row['CWE-ID']} {row['Name']}"
            rows.append(json.dumps({"id": f"CWE-{row['CWE-ID']}", "title": title, "text": text}))
    paths = []
    for name, part in (("all", rows), ("first", rows[: n // 2]), ("second", rows[n // 2 :])):
        path = folder / f"cwe-{name}.jsonl"
        path.write_text("\n".join(part) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _corpora(args: argparse.Namespace, folder: Path) -> dict[str, tuple[list, list, list]]:
    """corpus name -> (all paths, first half, second half); missing data is skipped."""
    out: dict[str, tuple[list, list, list]] = {}
    owasp = sorted((DATA / "docs" / "owasp-cheatsheets").glob("*.md"))[: args.owasp]
    if owasp:
        h = len(owasp) // 2
        out[f"owasp{len(owasp)}"] = (owasp, owasp[:h], owasp[h:])
    if (DATA / "cwe" / "1000.csv").exists() and args.cwe:
        every, first, second = _cwe_jsonl(folder, args.cwe)
        out[f"cwe{args.cwe}"] = ([every], [first], [second])
    asvs = sorted((DATA / "docs" / "asvs-4.0.3" / "zh-cn-md").glob("*.md"))
    asvs = asvs[: args.asvs] if args.asvs else asvs
    if asvs:
        h = len(asvs) // 2
        out[f"asvs_zh{len(asvs)}"] = (asvs, asvs[:h], asvs[h:])
    if not out:
        print(f"skipped the roles benchmark: no corpus under {DATA}")
    return out


def _counted(fake: FakeOpenAI) -> dict:
    """Chat requests per role (told by the requested schema) and repairs (a second user turn)."""
    counts = dict.fromkeys(ROLE_COLUMNS, 0) | {"other": 0, "repairs": 0, "requests": 0}
    for body in fake.bodies():
        role = ROLE_OF_SCHEMA.get(_schema_of(body)[0], "other")
        counts[role if role in counts else "other"] += 1
        counts["requests"] += 1
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        counts["repairs"] += len(users) > 1
    return counts


def _role_row(name: str, estimate: dict, counts: dict) -> dict:
    actual = counts["requests"]
    chunks = counts["chunk_knowledge"] - counts["repairs"]  # a repair repeats its chunk's role
    ratio = estimate["calls"] / actual if actual else 0.0
    return {
        "benchmark": name,
        "chunks": estimate["chunks"],
        **{role: counts[role] for role in ROLE_COLUMNS},
        "other": counts["other"],
        "repairs": counts["repairs"],
        "calls": actual,
        "calls_per_chunk": round(actual / chunks, 3) if chunks else 0,
        "est_calls": estimate["calls"],
        **{f"est_{role}": estimate["by_role"][role] for role in ROLE_COLUMNS},
        "est_basis": estimate["basis"],
        "est_ratio": round(ratio, 3),
        "goal": "estimate within 20% of the calls made",
        "met": abs(ratio - 1) <= 0.2,
    }


def bench_roles(
    corpus: str, paths: tuple[list, list, list], responder: str, incremental: bool, embedder
) -> list[dict]:
    every, first, second = paths
    rows = []
    builds = [("", [every])] + ([("_second_half", [first, second])] if incremental else [])
    for suffix, parts in builds:
        with (
            tempfile.TemporaryDirectory(prefix="zhixing-roles-") as tmp,
            FakeOpenAI(contextual_responder if responder == "contextual" else None) as fake,
            KnowledgeService(_fake_settings(Path(tmp), fake), embedder=embedder) as svc,
        ):
            svc.kbs.create("kb", mode="graph")
            for part in parts[:-1]:
                svc.builds.add("kb", part)  # the history the estimate of the last part reads
            estimate = svc.builds.estimate("kb", parts[-1])
            fake.reset()
            start = time.perf_counter()
            svc.builds.add("kb", parts[-1])
            wall = time.perf_counter() - start
            row = _role_row(f"roles_{corpus}_{responder}{suffix}", estimate, _counted(fake))
        rows.append({**row, "corpus": corpus, "responder": responder, "build_s": round(wall, 1)})
    return rows


def leave_one_out(rows: list[dict]) -> list[dict]:
    """Fit the default rates on all corpora but one, estimate that one; and on all of them."""
    fresh = [r for r in rows if not r["benchmark"].endswith("_second_half")]
    out = []
    for responder in RESPONDERS:
        group = [r for r in fresh if r["responder"] == responder]
        rates = {
            r["corpus"]: {role: r[role] / r["chunk_knowledge"] for role in EXTRA_ROLES}
            for r in group
            if r["chunk_knowledge"]
        }
        if len(rates) < 2:
            continue
        for r in group:
            others = [v for c, v in rates.items() if c != r["corpus"]]
            fit = {role: sum(v[role] for v in others) / len(others) for role in EXTRA_ROLES}
            est = r["chunk_knowledge"] * (1 + sum(fit.values()))
            ratio = est / r["calls"] if r["calls"] else 0.0
            out.append(
                {
                    "benchmark": f"roles_loo_{r['corpus']}_{responder}",
                    "fit_on": "+".join(c for c in rates if c != r["corpus"]),
                    **{f"rate_{role}": round(fit[role], 4) for role in EXTRA_ROLES},
                    "loo_est_calls": round(est),
                    "calls": r["calls"],
                    "loo_ratio": round(ratio, 3),
                    "goal": "left-out corpus estimated within 20%",
                    "met": abs(ratio - 1) <= 0.2,
                }
            )
        every = {role: sum(v[role] for v in rates.values()) / len(rates) for role in EXTRA_ROLES}
        out.append(
            {
                "benchmark": f"roles_fit_all_{responder}",
                "fit_on": "+".join(rates),
                **{f"rate_{role}": round(every[role], 4) for role in EXTRA_ROLES},
                **{f"default_{role}": DEFAULT_RATES[role] for role in EXTRA_ROLES},
                "goal": "informational (DEFAULT_RATES come from the contextual fit)",
                "met": True,
            }
        )
    return out


def print_roles(rows: list[dict]) -> None:
    builds = [r for r in rows if "est_calls" in r]
    if builds:
        print(
            f"{'build':38} {'chunks':>6} {'chunk':>6} {'same':>5} {'summ':>5} {'rep':>4}"
            f" {'calls':>6} {'/chunk':>6} | {'est':>5} {'chunk':>6} {'same':>5} {'summ':>5}"
            f" {'basis':8} {'est/act':>7}"
        )
        for r in builds:
            print(
                f"{r['benchmark'].removeprefix('roles_'):38} {r['chunks']:>6}"
                f" {r['chunk_knowledge']:>6} {r['same_entity']:>5}"
                f" {r['summarize_description']:>5} {r['repairs']:>4} {r['calls']:>6}"
                f" {r['calls_per_chunk']:>6.3f} | {r['est_calls']:>5}"
                f" {r['est_chunk_knowledge']:>6} {r['est_same_entity']:>5}"
                f" {r['est_summarize_description']:>5} {r['est_basis']:8} {r['est_ratio']:>7.3f}"
            )
    for r in rows:
        if "loo_ratio" in r:
            print(
                f"leave-one-out {r['benchmark'].removeprefix('roles_loo_'):28} fit on"
                f" {r['fit_on']}: rates {r['rate_same_entity']}/{r['rate_summarize_description']}"
                f" -> {r['loo_est_calls']} vs {r['calls']} calls, ratio {r['loo_ratio']}"
            )
        elif r["benchmark"].startswith("roles_fit_all_"):
            print(
                f"{r['benchmark']}: rates {r['rate_same_entity']}/"
                f"{r['rate_summarize_description']} (DEFAULT_RATES"
                f" {r['default_same_entity']}/{r['default_summarize_description']})"
            )


def _write(rows: list[dict], replace_prefixes: tuple[str, ...]) -> Path:
    """Merge into enrich.json: rows of sections not run this time stay as they were."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "enrich.json"
    try:
        old = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = []
    names = {r["benchmark"] for r in rows}
    kept = [
        r
        for r in (old if isinstance(old, list) else [])
        if isinstance(r, dict)
        and r.get("benchmark") not in names
        and not str(r.get("benchmark", "")).startswith(replace_prefixes)
    ]
    out.write_text(json.dumps(kept + rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--skip-offline", action="store_true")
    parser.add_argument("--skip-roles", action="store_true", help="skip the per-role builds")
    parser.add_argument("--roles-only", action="store_true", help="only the per-role builds")
    parser.add_argument("--owasp", type=int, default=20, help="cheat sheets (0: none)")
    parser.add_argument("--cwe", type=int, default=400, help="CWE entries (0: none)")
    parser.add_argument("--asvs", type=int, default=0, help="Chinese ASVS chapters (0: all)")
    parser.add_argument("--responders", default=",".join(RESPONDERS))
    parser.add_argument("--skip-incremental", action="store_true")
    args = parser.parse_args()
    embedder = BuiltinEmbedder()
    rows = []
    if not args.roles_only:
        rows += [
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
    if not args.skip_roles:
        responders = [r for r in args.responders.split(",") if r in RESPONDERS]
        role_rows: list[dict] = []
        with tempfile.TemporaryDirectory(prefix="zhixing-corpora-") as tmp:
            for corpus, paths in _corpora(args, Path(tmp)).items():
                for responder in responders:
                    incremental = responder == "contextual" and not args.skip_incremental
                    role_rows += bench_roles(corpus, paths, responder, incremental, embedder)
        role_rows += leave_one_out(role_rows)
        print_roles(role_rows)
        rows += role_rows
    out = _write(rows, ("roles_",) if not args.skip_roles else ())
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
