"""The task agent's report: Markdown with a summary, the plan before and after, and findings.

Each finding shows its severity, its evidence (file:line and the code line) and the knowledge it
rests on (clause or section, document, page). Text from documents and the workspace is quoted
in code spans or blocks, never as Markdown of its own, so it cannot restyle the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from core.task.state import HEURISTIC_NOTE, Finding, Subtask, SubtaskOutcome

__all__ = ["render_report"]

_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


def _inline(text: str) -> str:
    """Quote text as a code span, whatever backticks it holds."""
    text = " ".join(text.split())
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def render_report(
    *,
    task: str,
    plan_before: Sequence[str],
    subtasks: Sequence[Subtask],
    outcomes: Sequence[SubtaskOutcome],
    findings: Sequence[Finding],
) -> str:
    """Render the report for one task run."""
    counts = Counter(f.severity for f in findings)
    by_severity = ", ".join(f"{counts[s]} {s}" for s in _ORDER if counts[s]) or "none"
    heuristic = any(f.note == HEURISTIC_NOTE for f in findings)
    lines = [
        "# Task report",
        "",
        f"**Task:** {' '.join(task.split())}",
        "",
        "## Summary",
        "",
        f"{len(subtasks)} subtask(s) run; {len(findings)} finding(s) ({by_severity}).",
    ]
    if heuristic:
        lines.append(
            "Findings marked *unconfirmed heuristic* come from pattern matching without a model"
            " reading the code: review each one."
        )
    lines += ["", "## Plan", "", "### Before research", ""]
    lines += [f"{n}. {step}" for n, step in enumerate(plan_before, 1)]
    lines += ["", "### Revised plan", ""]
    for n, sub in enumerate(subtasks, 1):
        cited = "; ".join(f"{k.section} — {k.document}, p.{k.page}" for k in sub.knowledge[:2])
        lines.append(f"{n}. **{sub.title}**: {sub.goal}" + (f" *(per {cited})*" if cited else ""))
    if outcomes:
        lines += ["", "## Subtasks", ""]
        for o in outcomes:
            lines.append(
                f"- **{o.title}** ({o.mode}, {o.tool_calls} tool call(s), {o.findings}"
                f" finding(s)): {' '.join(o.summary.split())}"
            )
    lines += ["", "## Findings", ""]
    if not findings:
        lines.append("No findings.")
    ordered = sorted(findings, key=lambda f: (_ORDER.get(f.severity, 9), f.file, f.line))
    for n, f in enumerate(ordered, 1):
        lines += [
            f"### {n}. [{f.severity}] {f.title}",
            "",
            f"- Evidence: `{f.file}:{f.line}` — {_inline(f.code)}",
        ]
        for k in f.knowledge:
            lines.append(f"- Knowledge: {k.section} — {k.document}, p.{k.page}")
        if f.note:
            lines.append(f"- Note: {f.note}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
