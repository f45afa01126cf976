"""Our own Java audit suite, scored beside the OWASP Benchmark half (issue 36, point 5).

tests/fixtures/audit_suite holds a small fleet-management code base, unlike the Benchmark (no
servlet-per-case, no ``doPost``/``getParameter`` template): a command-line tool and release hook,
a TCP agent server and URL client, message consumers (JMS, Kafka) and a console written with
filters, helper services and repositories. Its answer key, ``expected.csv``, has one row per
case: ``file,method,cwe,vulnerable,source,flow``. A case is the method that holds the sink (for
a weakness without a data flow, the weak call); every flawed case has safe look-alikes of the
same CWE. ``source`` and ``flow`` label how the data reaches the sink; a safe case carries the
labels of the shape it imitates.

Scoring, in the manner of the OWASP scorer:

* a case is *flagged* when some finding whose CWE matches the case's CWE lies on a line of the
  case's method (a finding inside a lambda, an anonymous or a local class counts for the
  method that encloses it);
* CWEs match after one mapping, applied to the key and to the findings alike: the OWASP
  scorer's (23, 35 -> 22; 80 -> 79; 326, 329, 696 -> 327; 338 -> 330), and 259 (hard-coded
  password) and 321 (hard-coded key) -> 798 (hard-coded credentials); nothing else;
* per CWE: TP, FN, FP, TN, TPR, FPR and TPR - FPR; overall: the unweighted mean over CWEs of
  TPR, FPR and TPR - FPR (the suite's score), pooled TPR and FPR for information;
* per source kind and per flow kind: TPR over the flawed cases, FPR over the safe ones.

Findings that fall in no case method of their CWE are counted (``elsewhere``) but not scored.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from zhixing.core.audit import audit_tree
from zhixing.core.audit.java import child, line_of, parse, text, walk
from zhixing.core.audit.untrusted import SourceKind

SUITE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "audit_suite"
KEY = "expected.csv"
# The engine's source kinds (core/audit/untrusted.py), and "none" for a weakness without a flow.
SOURCES = (*get_args(SourceKind), "none")
FLOWS = (
    "local",
    "call",
    "field",
    "static-field",
    "container",
    "object-field",
    "constructor",
    "serialization",
    "lambda",
    "inner-class",
    "none",
)
CWE_MAP = {23: 22, 35: 22, 80: 79, 326: 327, 329: 327, 696: 327, 338: 330, 259: 798, 321: 798}
METHODS = frozenset(
    {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
)

Finding = tuple[str, int, int]  # file relative to the suite root, line, CWE
Span = tuple[str, int, int]  # method name ("<init>" for a constructor), first line, last line


def norm(cwe: int) -> int:
    """The CWE a reported or expected CWE counts as."""
    return CWE_MAP.get(cwe, cwe)


@dataclass(frozen=True)
class Case:
    file: str
    method: str
    cwe: int
    vulnerable: bool
    source: str
    flow: str


def load_cases(key: Path = SUITE / KEY) -> list[Case]:
    with key.open(newline="") as f:
        return [
            Case(
                r["file"],
                r["method"],
                int(r["cwe"]),
                r["vulnerable"] == "true",
                r["source"],
                r["flow"],
            )
            for r in csv.DictReader(f)
        ]


def method_spans(source: bytes) -> list[Span]:
    """Every method and constructor declared in a Java file, nested ones included."""
    spans = []
    for node in walk(parse(source).root_node, METHODS):
        name = "<init>" if "constructor" in node.type else text(child(node, "name"))
        spans.append((name, line_of(node), node.end_point[0] + 1))
    return spans


def suite_spans(root: Path, cases: Iterable[Case]) -> dict[str, list[Span]]:
    return {f: method_spans((root / f).read_bytes()) for f in sorted({c.file for c in cases})}


def flag(
    cases: Sequence[Case], findings: Iterable[Finding], spans: Mapping[str, Sequence[Span]]
) -> tuple[dict[Case, bool], int]:
    """Which cases some finding flags, and how many findings land in no case of their CWE."""
    wanted = {(c.file, c.method, norm(c.cwe)) for c in cases}
    hits: set[tuple[str, str, int]] = set()
    elsewhere = 0
    for file, line, cwe in findings:
        keys = {(file, m, norm(cwe)) for m, lo, hi in spans.get(file, ()) if lo <= line <= hi}
        hits |= keys & wanted
        elsewhere += not keys & wanted
    return {c: (c.file, c.method, norm(c.cwe)) in hits for c in cases}, elsewhere


def _rates(cases: Iterable[Case], flagged: Mapping[Case, bool]) -> dict[str, Any]:
    tp = fn = fp = tn = 0
    for c in cases:
        if c.vulnerable:
            tp, fn = (tp + 1, fn) if flagged[c] else (tp, fn + 1)
        else:
            fp, tn = (fp + 1, tn) if flagged[c] else (fp, tn + 1)
    tpr = tp / (tp + fn) if tp + fn else 0.0
    fpr = fp / (fp + tn) if fp + tn else 0.0
    return {"tp": tp, "fn": fn, "fp": fp, "tn": tn, "tpr": tpr, "fpr": fpr, "score": tpr - fpr}


def score(cases: Sequence[Case], flagged: Mapping[Case, bool]) -> dict[str, Any]:
    """Per CWE, overall, per source kind and per flow kind (see the module's docstring)."""
    cwes = sorted({norm(c.cwe) for c in cases})
    per_cwe = {str(w): _rates([c for c in cases if norm(c.cwe) == w], flagged) for w in cwes}
    pooled = _rates(cases, flagged)
    n = len(per_cwe) or 1
    overall = {k: sum(r[k] for r in per_cwe.values()) / n for k in ("tpr", "fpr", "score")} | {
        "pooled_tpr": pooled["tpr"],
        "pooled_fpr": pooled["fpr"],
        "cases": len(cases),
    }

    def by(attr: str, kinds: Sequence[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for kind in kinds:
            r = _rates([c for c in cases if getattr(c, attr) == kind], flagged)
            out[kind] = {"flawed": r["tp"] + r["fn"], "safe": r["fp"] + r["tn"]} | {
                k: r[k] for k in ("tp", "fp", "tpr", "fpr")
            }
        return out

    return {
        "overall": overall,
        "cwes": per_cwe,
        "sources": by("source", SOURCES),
        "flows": by("flow", FLOWS),
    }


def run(root: Path = SUITE, weak_random: str = "flow") -> dict[str, Any]:
    """Audit the suite with the engine and score it."""
    cases = load_cases(root / KEY)
    t0 = time.perf_counter()
    result = audit_tree(root, weak_random=weak_random)
    seconds = time.perf_counter() - t0
    findings = [(f.file, f.line, f.cwe) for f in result.findings]
    flagged, elsewhere = flag(cases, findings, suite_spans(root, cases))
    return {
        "suite": "tests/fixtures/audit_suite",
        "weak_random": weak_random,
        "seconds": round(seconds, 2),
        "files": result.files_scanned,
        "parse_errors": len(result.parse_errors),
        "findings": len(findings),
        "findings_elsewhere": elsewhere,
        "flagged": sorted(f"{c.file}:{c.method}:{c.cwe}" for c, hit in flagged.items() if hit),
    } | score(cases, flagged)


def print_tables(res: dict[str, Any]) -> None:
    print(
        f"{'CWE':>5} {'TP':>3} {'FN':>3} {'FP':>3} {'TN':>3} {'TPR%':>7} {'FPR%':>7} {'Score%':>7}"
    )
    for cwe, r in res["cwes"].items():
        print(
            f"{cwe:>5} {r['tp']:>3} {r['fn']:>3} {r['fp']:>3} {r['tn']:>3}"
            f" {100 * r['tpr']:>7.2f} {100 * r['fpr']:>7.2f} {100 * r['score']:>7.2f}"
        )
    o = res["overall"]
    print(
        f"{'mean':>5} {'':>15} {100 * o['tpr']:>7.2f} {100 * o['fpr']:>7.2f}"
        f" {100 * o['score']:>7.2f}   (pooled TPR {100 * o['pooled_tpr']:.2f}%,"
        f" FPR {100 * o['pooled_fpr']:.2f}%, {o['cases']} cases)"
    )
    for title in ("sources", "flows"):
        print(f"{title[:-1]:<16} {'flawed':>6} {'TPR%':>7} {'safe':>5} {'FPR%':>7}")
        for kind, r in res[title].items():
            print(
                f"{kind:<16} {r['flawed']:>6} {100 * r['tpr']:>7.2f}"
                f" {r['safe']:>5} {100 * r['fpr']:>7.2f}"
            )
    print(
        f"files {res['files']}, parse errors {res['parse_errors']}, findings {res['findings']}"
        f" ({res['findings_elsewhere']} in no case of their CWE), {res['seconds']:.1f} s"
    )
