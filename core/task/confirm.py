"""With a model configured: the model reviews each candidate finding of the static analysis,
with the code and the clause in front of it, within a call budget fixed before the run.

A candidate the model confirms becomes `confirmed: true` with its reason as the note; one it
rejects stays in the findings with the model's reason in `disagreed` (a weak model must not
subtract what the analysis found: the report marks it "the model disagreed" and SARIF writes it
as a suppression), and is counted in the subtask's summary; an unsure verdict, an
unreadable reply or a failed call leaves the candidate as it was, unconfirmed. Candidates past
the budget stay unconfirmed too, highest confidence reviewed first, so the budget goes where a
real weakness is likeliest.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import LLMError, ZhixingError
from .configuration import TaskContext
from .dataflow import rule_title
from .prompts import TASK_CONFIRM, FindingVerdict
from .state import Finding

__all__ = ["Review", "review", "summary"]

log = logging.getLogger(__name__)

_BEFORE, _AFTER = 12, 6  # lines of code shown around the finding
_CODE_CHARS = 4000
_RANK = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Review:
    """What reviewing one subtask's candidates came to."""

    findings: list[Finding]
    confirmed: int = 0
    rejected: int = 0
    calls: int = 0


def review(findings: Sequence[Finding], ctx: TaskContext, spent: int) -> Review:
    """Let the model confirm or reject the unconfirmed candidates, within what is left of the
    run's budget (`ctx.max_confirmations`, of which the run has `spent` so far; `calls` says
    how many this review spends)."""
    if ctx.llm is None or ctx.workspace is None:
        return Review(list(findings))
    left = max(ctx.max_confirmations - spent, 0)
    candidates = sorted(
        (i for i, f in enumerate(findings) if not f.confirmed),
        key=lambda i: _RANK.get(findings[i].confidence, 1),
    )[:left]
    if not candidates:
        return Review(list(findings))
    variables = [_variables(findings[i], ctx) for i in candidates]
    replies = ctx.llm.call_many(TASK_CONFIRM, variables)
    verdicts = dict(zip(candidates, replies, strict=True))
    kept: list[Finding] = []
    confirmed = rejected = 0
    for i, finding in enumerate(findings):
        reply = verdicts.get(i)
        verdict = _verdict(reply) if isinstance(reply, FindingVerdict) else "unsure"
        if isinstance(reply, LLMError):
            log.warning("Reviewing %s:%d failed: %s", finding.file, finding.line, reply)
        if verdict == "rejected" and isinstance(reply, FindingVerdict):
            rejected += 1
            reason = reply.reason.strip()[:500] or reply.verdict.strip()[:100] or "rejected"
            finding = replace(finding, disagreed=reason)
        if verdict == "confirmed" and isinstance(reply, FindingVerdict):
            confirmed += 1
            finding = replace(finding, confirmed=True, note=reply.reason.strip()[:500])
        kept.append(finding)
    return Review(kept, confirmed, rejected, len(candidates))


def summary(reviewed: Review, *, chinese: bool) -> str:
    """One sentence on the model's review ("" when it reviewed nothing)."""
    if not reviewed.calls:
        return ""
    c, r, n = reviewed.confirmed, reviewed.rejected, reviewed.calls
    if chinese:
        return f"模型复核 {n} 项候选：确认 {c} 项，否决 {r} 项。"
    return f"The model reviewed {n} candidate(s): {c} confirmed, {r} rejected."


def _verdict(reply: FindingVerdict) -> str:
    """confirmed | rejected | unsure, from the words a model may use for them."""
    word = reply.verdict.strip().lower()
    if word.startswith(("confirm", "true", "yes", "real", "vulnerable", "valid")):
        return "confirmed"
    if word.startswith(("reject", "false", "no", "not", "safe", "invalid")):
        return "rejected"
    return "unsure"


def _variables(finding: Finding, ctx: TaskContext) -> dict[str, object]:
    clause = "\n".join(
        f"{k.section} ({k.document}, p.{k.page}): {k.text}" for k in finding.knowledge
    )
    return {
        "clause": clause or f"Built-in rule {finding.rule}: {rule_title(finding.rule)}",
        "title": finding.title,
        "cwe": finding.cwe or "?",
        "rule": finding.rule or "-",
        "file": finding.file,
        "line": finding.line,
        "trace": " → ".join(finding.trace) or "-",
        "code": _code(finding, ctx),
    }


def _code(finding: Finding, ctx: TaskContext) -> str:
    assert ctx.workspace is not None
    start = max(finding.line - _BEFORE, 1)
    try:
        text = ctx.workspace.read_file(finding.file, start, finding.line + _AFTER)
    except ZhixingError:  # the file went away or is too short: the line itself
        text = f"{finding.line}| {finding.code}"
    return text[:_CODE_CHARS]
