"""A task run's findings in machine-readable form: SARIF 2.1.0 and CSV.

Both are written from the `run --json` finding shape (`Finding.to_json()`), so the CLI and the
Agent page (which keeps a run as that shape) produce the same files. Each finding names what it
came from: a rule of the built-in pack (`zhixing.<weakness>.<rule>`), a line rule of a known
topic (`zhixing.pattern.<topic>`), an API a clause forbids (`zhixing.clause.forbidden-api`) or
the model (`model`); and the clause it cites, when it cites one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..audit import (
    BUILTIN_RULES,
    AuditFinding,
    AuditResult,
    AuditRule,
    csv_text,
    to_sarif,
)
from ..errors import ZhixingError
from .audit_rules import topic_named

__all__ = [
    "CSV_COLUMNS",
    "findings_csv",
    "findings_sarif",
    "render_findings",
    "write_findings",
]

CSV_COLUMNS = ("file", "line", "cwe", "rule", "confidence", "title", "clause")
_BUILTIN = {r.id: r for r in BUILTIN_RULES}


def clause_of(finding: Mapping[str, Any]) -> str:
    """The clause a finding cites, as "section — document p.N" ("" when none)."""
    refs = finding.get("knowledge") or []
    if not refs:
        return ""
    ref = refs[0]
    return f"{ref.get('section', '')} — {ref.get('document', '')} p.{ref.get('page', '')}"


def findings_csv(findings: Sequence[Mapping[str, Any]]) -> str:
    """One row per finding, with a header: file, line, cwe, rule, confidence, title, clause.

    A cell that a spreadsheet would run as a formula is written as text (`csv_text`)."""
    return csv_text(CSV_COLUMNS, (_csv_row(f) for f in findings))


def _csv_row(f: Mapping[str, Any]) -> list[object]:
    cwe = int(f.get("cwe") or 0)
    return [
        f.get("file", ""),
        f.get("line", 0),
        f"CWE-{cwe}" if cwe else "",
        f.get("rule") or "model",
        f.get("confidence") or "",
        f.get("title", ""),
        clause_of(f),
    ]


def findings_sarif(
    findings: Sequence[Mapping[str, Any]], tool_version: str, root: Path | None = None
) -> dict[str, Any]:
    """One SARIF 2.1.0 log: the rules the findings came from, one result per finding.

    `root`: the workspace folder the findings' paths are relative to, when known (it becomes
    `%SRCROOT%` and names the run's `automationDetails`: "zhixing/task/<folder name>/")."""
    rules: dict[str, AuditRule] = {}
    audit: list[AuditFinding] = []
    for f in findings:
        rule = str(f.get("rule") or "model")
        cwe = int(f.get("cwe") or 0)
        if rule not in rules:
            rules[rule] = _BUILTIN.get(rule) or _rule_for(rule, cwe)
        audit.append(
            AuditFinding(
                file=str(f.get("file", "")),
                line=max(int(f.get("line") or 1), 1),
                column=1,
                cwe=cwe,
                rule=rule,
                title=str(f.get("title", "")),
                confidence=str(f.get("confidence") or _confidence(f)),
                code=str(f.get("code", "")),
                clause=clause_of(f),
            )
        )
    result = AuditResult(root=str(root) if root is not None else "", findings=audit)
    log = to_sarif(result, tool_version, rules=list(rules.values()), kind="task")
    # A candidate the model rejected stays a result, suppressed "externally" (by a reviewer
    # outside the analysis) with the model's reason: code-scanning tools hide it by default
    # without losing it (SARIF 2.1.0 §3.34).
    for res, f in zip(log["runs"][0]["results"], findings, strict=True):
        if f.get("disagreed"):
            res["suppressions"] = [
                {"kind": "external", "status": "accepted", "justification": str(f["disagreed"])}
            ]
    return log


def render_findings(
    findings: Sequence[Mapping[str, Any]], kind: str, tool_version: str, root: Path | None = None
) -> str:
    """The findings as a SARIF 2.1.0 log ("sarif") or a CSV table ("csv"); `root`: the
    workspace folder, when known (`findings_sarif`)."""
    import json

    if kind == "sarif":
        log = findings_sarif(findings, tool_version, root)
        return json.dumps(log, ensure_ascii=False, indent=2)
    if kind == "csv":
        return findings_csv(findings)
    raise ZhixingError(f"Findings are written as 'sarif' or 'csv', not {kind!r}.")


def write_findings(
    findings: Sequence[Mapping[str, Any]], path: Path, tool_version: str, root: Path | None = None
) -> None:
    """Write the findings to `path` as SARIF (.sarif, .sarif.json) or CSV (.csv); `root`: the
    workspace folder, when known."""
    name = path.name.lower()
    if name.endswith((".sarif", ".sarif.json")):
        kind = "sarif"
    elif name.endswith(".csv"):
        kind = "csv"
    else:
        raise ZhixingError(
            f"{path.name}: --findings writes .sarif or .csv files; name the file so."
        )
    path.write_text(render_findings(findings, kind, tool_version, root), encoding="utf-8")


def _rule_for(rule: str, cwe: int) -> AuditRule:
    """The descriptor of a rule outside the built-in pack: a topic's line rule, a clause's
    forbidden API, or the model (its CWE: that of its first finding; the SARIF writer adds the
    CWEs of the others)."""
    if rule.startswith("zhixing.pattern."):
        topic = topic_named(rule.removeprefix("zhixing.pattern."))
        name = topic.name if topic is not None else rule.removeprefix("zhixing.pattern.")
        return AuditRule(
            rule,
            topic.cwes[0] if topic is not None and topic.cwes else cwe,
            f"{name} (line pattern)",
            f"A line pattern of the built-in rule pack for the topic {name} (no data flow seen).",
        )
    if rule == "zhixing.clause.forbidden-api":
        return AuditRule(
            rule,
            cwe,
            "Use of an API a clause forbids",
            "A use of an API that a clause of the attached knowledge forbids.",
        )
    return AuditRule(
        rule,
        cwe,
        "Reported by the model",
        "A weakness the model found while carrying out a subtask.",
    )


def _confidence(finding: Mapping[str, Any]) -> str:
    return "high" if finding.get("confirmed") else "medium"
