"""Writers: SARIF 2.1.0 (for code-scanning tools) and a flat CSV (for scoring and spreadsheets)."""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .model import AuditFinding, AuditResult, AuditRule
from .rule_docs import precision, rule_help, security_severity
from .rules import BUILTIN_RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The tool's `informationUri`. The project has no public home page yet, so this is a
# placeholder on a domain reserved for documentation (RFC 2606): it names no real site.
# Replace it with the project's documentation URL once there is one.
INFORMATION_URI = "https://example.com/zhixing"
# The one base of every artifact location: the audited root (`run.originalUriBaseIds`).
SRCROOT = "%SRCROOT%"
# Our own `partialFingerprints` key, versioned: a different recipe would be a new key.
FINGERPRINT_KEY = "zhixing/v1"
_LEVEL = {"high": "error", "medium": "warning", "low": "note"}
CSV_COLUMNS = ("file", "line", "cwe", "rule", "confidence", "title", "clause", "source")
# A spreadsheet reads a cell that starts with one of these as a formula (OWASP, "CSV Injection";
# ASVS 1.2.10 adds NUL): `=HYPERLINK(...)` in a file name or a clause heading would run on open.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")


def to_sarif(
    result: AuditResult,
    tool_version: str,
    rules: Sequence[AuditRule] = BUILTIN_RULES,
    *,
    kind: str = "audit",
) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run, with what code-scanning dashboards read: rule help
    (text and Markdown), `security-severity`, `precision` and `external/cwe/cwe-N` tags per rule;
    a `partialFingerprints` entry per result; locations relative to `%SRCROOT%` (the audited
    root, `result.root`, when known); `automationDetails` "zhixing/<kind>/<root name>/".

    `rules` must hold the rule of every finding (the built-in pack by default)."""
    index = {r.id: i for i, r in enumerate(rules)}
    cwes: dict[str, list[int]] = {r.id: [r.cwe] for r in rules}
    clauses: dict[str, list[str]] = {r.id: [] for r in rules}
    for f in result.findings:
        cwes[f.rule].append(f.cwe)
        if f.clause and f.clause not in clauses[f.rule]:
            clauses[f.rule].append(f.clause)
    descriptors = [_rule(r, cwes[r.id], clauses[r.id]) for r in rules]
    prints = fingerprints(result.findings)
    results: list[dict[str, Any]] = []
    for f, fingerprint in zip(result.findings, prints, strict=True):
        res: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _LEVEL.get(f.confidence, "warning"),
            "message": {"text": _message(f)},
            "locations": [_location(f.file, f.line, f.column)],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
            "properties": {"confidence": f.confidence},
        }
        if f.cwe:
            res["properties"]["cwe"] = f"CWE-{f.cwe}"
        if f.clause:
            res["properties"]["clause"] = f.clause
        if f.source:
            res["properties"]["source"] = f.source
        if len(f.trace) > 1:
            res["codeFlows"] = [
                {
                    "threadFlows": [
                        {
                            "locations": [
                                {
                                    "location": {
                                        **_location(s.file, s.line, None),
                                        "message": {"text": s.note},
                                    }
                                }
                                for s in f.trace
                            ]
                        }
                    ]
                }
            ]
        results.append(res)
    root = Path(result.root) if result.root else None
    base: dict[str, Any] = {"description": {"text": "The root of the audited source tree."}}
    if root is not None:
        base["uri"] = root.resolve().as_uri().rstrip("/") + "/"
    category = f"zhixing/{kind}/" + (f"{root.resolve().name or 'root'}/" if root else "")
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "Zhixing",
                        "version": tool_version,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                "automationDetails": {"id": category},
                "originalUriBaseIds": {SRCROOT: base},
                "results": results,
                "columnKind": "utf16CodeUnits",
            }
        ],
    }


def fingerprints(findings: Sequence[AuditFinding]) -> list[str]:
    """A `partialFingerprints` value per finding that survives lines inserted or removed
    above it: a hash of the rule id, the file and the code line with its white space
    collapsed, then ":" and the occurrence of that same (rule, file, code) triple in the file,
    counted in line order from 1 (so two identical lines stay distinct). The line number is
    left out on purpose: it changes whenever code above moves."""
    order = sorted(range(len(findings)), key=lambda i: (findings[i].file, findings[i].line))
    seen: dict[str, int] = {}
    out = [""] * len(findings)
    for i in order:
        f = findings[i]
        code = " ".join(f.code.split()) or f.title
        digest = hashlib.sha256("\0".join((f.rule, f.file, code)).encode()).hexdigest()[:32]
        seen[digest] = seen.get(digest, 0) + 1
        out[i] = f"{digest}:{seen[digest]}"
    return out


def _message(f: AuditFinding) -> str:
    text = f.title + (f" (CWE-{f.cwe})" if f.cwe else "")
    if f.code:
        text += f": {f.code}"
    if f.clause:
        text += f" — clause cited: {f.clause}"
    return text


def _rule(rule: AuditRule, cwes: Sequence[int], clauses: Sequence[str]) -> dict[str, Any]:
    known = list(dict.fromkeys(c for c in cwes if c))
    properties: dict[str, Any] = {
        "tags": ["security", *(f"external/cwe/cwe-{c}" for c in known)],
        "security-severity": security_severity(known),
        "precision": precision(rule.id),
    }
    out: dict[str, Any] = {
        "id": rule.id,
        "name": rule.id.split(".", 1)[-1].replace(".", "-"),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.description},
        "help": rule_help(rule, known, clauses),
        "properties": properties,
    }
    if known:
        out["helpUri"] = f"https://cwe.mitre.org/data/definitions/{known[0]}.html"
        properties["cwe"] = f"CWE-{known[0]}"
    return out


def _location(file: str, line: int, column: int | None) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": line}
    if column is not None:
        region["startColumn"] = column
    artifact = {"uri": quote(file, safe="/"), "uriBaseId": SRCROOT}
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def to_csv(result: AuditResult) -> str:
    """Findings as CSV with a header row (``clause`` is empty for the built-in pack;
    ``source`` is the kind of outside data a flow started from)."""
    rows = (
        [f.file, f.line, f.cwe, f.rule, f.confidence, f.title, f.clause, f.source]
        for f in result.findings
    )
    return csv_text(CSV_COLUMNS, rows)


def spreadsheet_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text: a string that would start a formula gets a `'`.

    A carriage return becomes a line feed: the writer quotes a field with a line feed but not
    one with a bare CR, which a spreadsheet would read as the start of a new row (and of a new
    formula). Numbers stay numbers (a negative line number is not text someone planted)."""
    if not isinstance(value, str):
        return value
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    return "'" + text if value.startswith(_FORMULA_START) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A CSV table with a header row, every cell passed through `spreadsheet_cell`: the one
    way Zhixing writes CSV."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([spreadsheet_cell(v) for v in row])
    return buf.getvalue()
