"""Writers: SARIF 2.1.0 (for code-scanning tools) and a flat CSV (for scoring and spreadsheets)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from .model import AuditResult, AuditRule
from .rules import BUILTIN_RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"high": "error", "medium": "warning", "low": "note"}
CSV_COLUMNS = ("file", "line", "cwe", "rule", "confidence", "title", "clause")
# A spreadsheet reads a cell that starts with one of these as a formula (OWASP, "CSV Injection";
# ASVS 1.2.10 adds NUL): `=HYPERLINK(...)` in a file name or a clause heading would run on open.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")


def to_sarif(
    result: AuditResult, tool_version: str, rules: Sequence[AuditRule] = BUILTIN_RULES
) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run; CWE ids go in rule properties and result properties.

    `rules` must hold the rule of every finding (the built-in pack by default)."""
    descriptors = [_rule(r) for r in rules]
    index = {r.id: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f in result.findings:
        res: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _LEVEL.get(f.confidence, "warning"),
            "message": {"text": f"{f.title} (CWE-{f.cwe}): {f.code}"},
            "locations": [_location(f.file, f.line, f.column)],
            "properties": {"confidence": f.confidence},
        }
        if f.cwe:
            res["properties"]["cwe"] = f"CWE-{f.cwe}"
        if f.clause:
            res["properties"]["clause"] = f.clause
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
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "Zhixing",
                        "version": tool_version,
                        "informationUri": "https://github.com/",
                        "rules": descriptors,
                    }
                },
                "results": results,
                "columnKind": "utf16CodeUnits",
            }
        ],
    }


def _rule(rule: AuditRule) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": rule.id,
        "name": rule.id.split(".", 1)[-1].replace(".", "-"),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.description},
    }
    if rule.cwe:
        out["helpUri"] = f"https://cwe.mitre.org/data/definitions/{rule.cwe}.html"
        out["properties"] = {"cwe": f"CWE-{rule.cwe}", "tags": ["security", f"CWE-{rule.cwe}"]}
    return out


def _location(file: str, line: int, column: int | None) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": line}
    if column is not None:
        region["startColumn"] = column
    return {"physicalLocation": {"artifactLocation": {"uri": file}, "region": region}}


def to_csv(result: AuditResult) -> str:
    """Findings as CSV with a header row (``clause`` is empty for the built-in pack)."""
    rows = (
        [f.file, f.line, f.cwe, f.rule, f.confidence, f.title, f.clause] for f in result.findings
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
