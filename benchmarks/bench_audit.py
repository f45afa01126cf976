"""Java audit benchmark: the built-in rule pack on the OWASP Benchmark for Java v1.2 (half A).

Run `python benchmarks/bench_audit.py [--data DIR]` from the repository root. It unpacks the
project archive to a temporary folder, runs `core.audit.audit_tree`, writes the findings CSV,
scores it with the data set's own `score.py` (official rules: per category TPR - FPR, averaged)
and prints a per-category table beside published anchors, with time and peak memory. The same
findings are also scored on two sub-halves (test number parity of (n-1)/2) to show whether the
score holds on cases the rules were not looked at against.

`--suite own` scores our own suite instead (tests/fixtures/audit_suite: other sources than
servlet requests, other flows, look-alike safe cases; see benchmarks/audit_suite.py), `--suite
both` (the default) runs the two. `--suite holdout` scores the held-out suite alone
(tests/fixtures/audit_holdout, written without looking at the engine and never tuned against).
Results go to benchmarks/results/bench_audit.json: the OWASP figures at the top level, ours under
"own_suite", the held-out suite's under "holdout_suite"; a run of one suite keeps the others'.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import audit_suite  # noqa: E402
from zhixing.core.audit import audit_tree, to_csv  # noqa: E402

ARCHIVE = "benchmark-dev-project.tar.gz"
EXPECTED = "expected-dev.csv"
# Overall scores published for other tools on the full v1.2 suite, and this project before.
ANCHORS = {"Semgrep": 41.7, "FindSecBugs": 39.5, "SonarQube": 33.2, "Zhixing before": 1.1}
TARGET_SECONDS = 60.0
HOLDOUT = ROOT / "tests" / "fixtures" / "audit_holdout"
# The agent's knowledge: eight OWASP cheat sheets on the weaknesses the suite covers.
CHEAT_SHEETS = (
    "SQL_Injection_Prevention",
    "Cross_Site_Scripting_Prevention",
    "OS_Command_Injection_Defense",
    "LDAP_Injection_Prevention",
    "Cryptographic_Storage",
    "Password_Storage",
    "Session_Management",
    "Input_Validation",
)
TASK = "Audit this Java web application for security weaknesses, following @owasp"


def _agent(data: Path, tmp: Path) -> tuple[Path, float, int]:
    """The whole task agent, offline, as `zhixing run owasp TASK --workspace ARCHIVE --findings
    out.csv` runs it: research, plan, the analysis and every subtask. Returns the findings
    file, the run's seconds (the knowledge base is built before the clock starts) and the
    number of findings."""
    from zhixing.core.config import Settings
    from zhixing.core.service import KnowledgeService
    from zhixing.core.task.export import findings_csv

    docs = data.parent / "docs" / "owasp-cheatsheets"
    with KnowledgeService(Settings(home=tmp / "home")) as svc:
        svc.kbs.create("owasp")
        svc.builds.add("owasp", [docs / f"{name}_Cheat_Sheet.md" for name in CHEAT_SHEETS])
        t0 = time.perf_counter()
        result = svc.tasks.run(TASK, ["owasp"], workspace=data / ARCHIVE)
        seconds = time.perf_counter() - t0
    findings = [f.to_json() for f in result.findings]
    out = tmp / "agent-findings.csv"
    out.write_text(findings_csv(findings))
    print(
        "agent plan: "
        + " | ".join(s.title for s in result.plan_after)
        + f"\nagent: {len(findings)} findings, "
        f"{sum(1 for f in findings if f['knowledge'])} citing a clause"
    )
    return out, seconds, len(findings)


def _score(score_py: Path, expected: Path, findings: Path, out: Path) -> dict[str, Any]:
    subprocess.run(
        [
            sys.executable,
            str(score_py),
            str(expected),
            str(findings),
            "--json",
            str(out),
            "--quiet",
        ],
        check=True,
    )
    scored: dict[str, Any] = json.loads(out.read_text())
    return scored


def _split_expected(expected: Path, tmp: Path) -> dict[str, Path]:
    """Write two answer keys: tests whose (n-1)/2 is even, and those whose (n-1)/2 is odd."""
    lines = expected.read_text().splitlines()
    header = [x for x in lines if x.startswith("#")]
    halves: dict[str, list[str]] = {"even": [], "odd": []}
    for x in lines:
        if x.startswith("#") or not x.strip():
            continue
        n = int(x.split(",")[0][-5:])
        halves["even" if ((n - 1) // 2) % 2 == 0 else "odd"].append(x)
    out = {}
    for name, rows in halves.items():
        p = tmp / f"expected-{name}.csv"
        p.write_text("\n".join(header + rows) + "\n")
        out[name] = p
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, default=ROOT / ".." / "shared" / "data" / "owasp-benchmark"
    )
    ap.add_argument("--suite", choices=["owasp", "own", "both", "holdout"], default="both")
    ap.add_argument("--weak-random", choices=["flow", "any"], default="flow")
    ap.add_argument(
        "--no-agent", action="store_true", help="score the analysis alone, not the task agent too"
    )
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_audit.json"
    )
    a = ap.parse_args(argv)
    try:
        report: dict[str, Any] = json.loads(a.out.read_text())
    except (OSError, ValueError):
        report = {}
    if a.suite in ("owasp", "both"):
        report.update(_owasp(a))
    if a.suite in ("own", "both"):
        if a.suite == "both":
            print()
        print("own suite (tests/fixtures/audit_suite)")
        own = audit_suite.run(weak_random=a.weak_random)
        audit_suite.print_tables(own)
        own["met"] = own["seconds"] < TARGET_SECONDS
        report["own_suite"] = own
    if a.suite == "holdout":
        print("held-out suite (tests/fixtures/audit_holdout)")
        held = audit_suite.run(HOLDOUT, weak_random=a.weak_random)
        held["suite"] = "tests/fixtures/audit_holdout"
        audit_suite.print_tables(held)
        report["holdout_suite"] = held
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def _owasp(a: argparse.Namespace) -> dict[str, Any]:
    """Audit and score the OWASP half (and the agent unless --no-agent); print the table and
    return the figures for the top level of the JSON report."""
    data = a.data.resolve()
    with tempfile.TemporaryDirectory(prefix="bench_audit_") as tmpname:
        tmp = Path(tmpname)
        src = tmp / "project"
        with tarfile.open(data / ARCHIVE) as tar:
            tar.extractall(src, filter="data")
        t0 = time.perf_counter()
        result = audit_tree(src, weak_random=a.weak_random)
        seconds = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        findings = tmp / "findings.csv"
        findings.write_text(to_csv(result))
        full = _score(data / "score.py", data / EXPECTED, findings, tmp / "score.json")
        halves = {
            name: _score(data / "score.py", exp, findings, tmp / f"score-{name}.json")
            for name, exp in _split_expected(data / EXPECTED, tmp).items()
        }
        rows = list(csv.DictReader(findings.open()))
        agent: dict[str, Any] = {}
        if not a.no_agent:
            agent_csv, agent_s, agent_n = _agent(data, tmp)
            agent = {
                "seconds": round(agent_s, 2),
                "findings": agent_n,
                "score": _score(data / "score.py", data / EXPECTED, agent_csv, tmp / "a.json"),
            }

    print(
        f"{'category':<13} {'CWE':>4} {'TPR%':>7} {'FPR%':>7} {'Score%':>7}"
        f" {'even%':>7} {'odd%':>7}"
    )
    for cat, c in full["categories"].items():
        ev = halves["even"]["categories"].get(cat, {}).get("score", 0.0)
        od = halves["odd"]["categories"].get(cat, {}).get("score", 0.0)
        print(
            f"{cat:<13} {c['cwe']:>4} {100 * c['tpr']:>7.2f} {100 * c['fpr']:>7.2f}"
            f" {100 * c['score']:>7.2f} {100 * ev:>7.2f} {100 * od:>7.2f}"
        )
    o = full["overall"]
    print(
        f"{'OVERALL(avg)':<13} {'':>4} {100 * o['tpr']:>7.2f} {100 * o['fpr']:>7.2f}"
        f" {100 * o['score']:>7.2f} {100 * halves['even']['overall']['score']:>7.2f}"
        f" {100 * halves['odd']['overall']['score']:>7.2f}"
    )
    print("anchors (overall score %): " + ", ".join(f"{k} {v}" for k, v in ANCHORS.items()))
    print(
        f"files {result.files_scanned}, parse errors {len(result.parse_errors)}, "
        f"findings {len(rows)}, {seconds:.1f} s (target < {TARGET_SECONDS:.0f} s), "
        f"peak RSS {peak_mb:.0f} MB"
    )
    if agent:
        ao = agent["score"]["overall"]
        worst = min(c["score"] for c in agent["score"]["categories"].values())
        print(
            f"task agent, offline, 8 OWASP cheat sheets as knowledge: score {100 * ao['score']:.2f}%"
            f" (TPR {100 * ao['tpr']:.2f}%, FPR {100 * ao['fpr']:.2f}%, lowest category"
            f" {100 * worst:.2f}%), {agent['findings']} findings, {agent['seconds']:.1f} s"
            f" (target < {TARGET_SECONDS:.0f} s), peak RSS"
            f" {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (whole process)"
        )
    return {
        "benchmark": "owasp_benchmark_java_1.2_half_a",
        "weak_random": a.weak_random,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_mb),
        "files": result.files_scanned,
        "parse_errors": len(result.parse_errors),
        "findings": len(rows),
        "overall": full["overall"],
        "categories": full["categories"],
        "halves": {
            k: {
                "overall": v["overall"]["score"],
                "categories": {c: x["score"] for c, x in v["categories"].items()},
            }
            for k, v in halves.items()
        },
        "anchors": ANCHORS,
        "agent": {
            "seconds": agent.get("seconds"),
            "findings": agent.get("findings"),
            "overall": agent["score"]["overall"] if agent else None,
            "categories": agent["score"]["categories"] if agent else None,
        },
        "met": o["score"] >= 0.60
        and min(c["score"] for c in full["categories"].values()) >= 0.30
        and seconds < TARGET_SECONDS,
    }


if __name__ == "__main__":
    sys.exit(main())
