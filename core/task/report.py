"""The task agent's report: Markdown with a summary, the plan before and after, and findings.

Each finding shows its severity, its evidence (file:line and the code line) and the knowledge it
rests on (clause or section, document, page). Text from documents and the workspace is quoted
in code spans or blocks, never as Markdown of its own, so it cannot restyle the report.

The report speaks the task's language (`core.answer.is_chinese`): a task asked in Chinese gets
Chinese headings and sentences. It names the knowledge bases it consulted (`@name`), and when no
workspace was attached it says first, plainly, that no code was audited, so that "0 findings"
cannot read as a clean audit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..text.language import is_chinese
from .state import HEURISTIC_NOTE, Finding, Subtask, SubtaskOutcome

__all__ = ["no_workspace_warning", "render_report"]

_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass(frozen=True)
class _Words:
    """Everything the report says in its own words, in one language."""

    title: str
    task: str
    kbs: str
    kbs_all: str
    kb_separator: str
    note: str
    no_workspace: str
    summary: str
    run: str  # {subtasks} {findings} {by_severity}
    severity: dict[str, str]
    severity_count: str  # {n} {severity}
    none: str
    heuristic: str
    plan: str
    before: str
    revised: str
    per: str  # {cited}
    cited: str  # {section} {document} {page}
    subtasks: str
    outcome: str  # {title} {mode} {calls} {findings} {summary}
    modes: dict[str, str]
    findings: str
    no_findings: str
    not_audited: str
    evidence: str
    knowledge: str
    note_label: str
    notes: dict[str, str]
    rule: str  # {rule} {pack} {confidence}
    builtin_pack: str
    flow: str  # {steps}
    disagreed: str  # {reason}


_EN = _Words(
    title="# Task report",
    task="**Task:** {task}",
    kbs="**Knowledge bases:** {names}",
    kbs_all="all the knowledge bases you may read",
    kb_separator=", ",
    note="> **Note:** {text}",
    no_workspace=(
        "No workspace (project code) was attached, so no code was audited: this report only"
        " consulted the knowledge, and its finding count says nothing about any code."
    ),
    summary="## Summary",
    run="{subtasks} subtask(s) run; {findings} finding(s) ({by_severity}).",
    severity={},
    severity_count="{n} {severity}",
    none="none",
    heuristic=(
        "Findings marked *unconfirmed heuristic* come from pattern matching without a model"
        " reading the code: review each one."
    ),
    plan="## Plan",
    before="### Before research",
    revised="### Revised plan",
    per=" *(per {cited})*",
    cited="{section} — {document}, p.{page}",
    subtasks="## Subtasks",
    outcome="- **{title}** ({mode}, {calls} tool call(s), {findings} finding(s)): {summary}",
    modes={},
    findings="## Findings",
    no_findings="No findings.",
    not_audited="None: no code was audited (no workspace was attached).",
    evidence="- Evidence: {where} — {code}",
    knowledge="- Knowledge: {cited}",
    note_label="- Note: {note}",
    notes={},
    rule="- Rule: `{rule}` ({pack}; confidence {confidence})",
    builtin_pack="built-in rule pack",
    flow="- Data flow: {steps}",
    disagreed="- The model disagreed: {reason}",
)

_ZH = _Words(
    title="# 任务报告",
    task="**任务：** {task}",
    kbs="**知识库：** {names}",
    kbs_all="你有权查看的全部知识库",
    kb_separator="、",
    note="> **注意：** {text}",
    no_workspace=(
        "没有附加工作区（项目代码），因此没有审计任何代码：本报告只查阅了知识库，"
        "发现的数量不说明代码有没有问题。"
    ),
    summary="## 摘要",
    run="执行了 {subtasks} 个子任务；{findings} 项发现（{by_severity}）。",
    severity={"high": "高", "medium": "中", "low": "低", "info": "提示"},
    severity_count="{severity} {n} 项",
    none="无",
    heuristic="标为「未确认的启发式结果」的发现来自模式匹配，没有模型读过代码：请逐条复核。",
    plan="## 计划",
    before="### 研究之前",
    revised="### 修订后的计划",
    per=" *（依据 {cited}）*",
    cited="{section} — {document}，第 {page} 页",
    subtasks="## 子任务",
    outcome="- **{title}**（{mode}，{calls} 次工具调用，{findings} 项发现）：{summary}",
    modes={
        "tools": "大模型调用工具",
        "structured turns": "大模型按结构化步骤选择工具",
        "offline, model reviewing": "离线执行，大模型复核",
        "offline": "离线",
        "offline (LLM failed)": "离线（大模型调用失败）",
        "built-in": "内置规则包",
    },
    findings="## 发现",
    no_findings="没有发现。",
    not_audited="无：没有审计任何代码（没有附加工作区）。",
    evidence="- 证据：{where} — {code}",
    knowledge="- 依据：{cited}",
    note_label="- 备注：{note}",
    notes={HEURISTIC_NOTE: "未确认的启发式结果"},
    rule="- 规则：`{rule}`（{pack}；置信度 {confidence}）",
    builtin_pack="内置规则包",
    flow="- 数据流：{steps}",
    disagreed="- 模型不同意：{reason}",
)


def _words(task: str) -> _Words:
    return _ZH if is_chinese(task) else _EN


def no_workspace_warning(task: str) -> str:
    """The sentence a run without a workspace carries, in the task's language."""
    return _words(task).no_workspace


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
    knowledge_bases: Sequence[str] = (),
    workspace: bool = True,
) -> str:
    """Render the report for one task run, in the task's language.

    `knowledge_bases` are the names the run consulted (none: every one the user may read);
    `workspace` says whether a workspace was attached, i.e. whether any code was audited.
    """
    w = _words(task)
    counts = Counter(f.severity for f in findings)
    by_severity = (
        ", ".join(
            w.severity_count.format(n=counts[s], severity=w.severity.get(s, s))
            for s in _ORDER
            if counts[s]
        )
        or w.none
    )
    names = w.kb_separator.join(f"@{name}" for name in knowledge_bases) or w.kbs_all
    lines = [w.title, "", w.task.format(task=" ".join(task.split())), w.kbs.format(names=names)]
    if not workspace:
        lines += ["", w.note.format(text=w.no_workspace)]
    lines += [
        "",
        w.summary,
        "",
        w.run.format(subtasks=len(subtasks), findings=len(findings), by_severity=by_severity),
    ]
    if any(f.note == HEURISTIC_NOTE for f in findings):
        lines.append(w.heuristic)
    lines += ["", w.plan, "", w.before, ""]
    lines += [f"{n}. {step}" for n, step in enumerate(plan_before, 1)]
    lines += ["", w.revised, ""]
    for n, sub in enumerate(subtasks, 1):
        cited = "; ".join(
            w.cited.format(section=k.section, document=k.document, page=k.page)
            for k in sub.knowledge[:2]
        )
        lines.append(
            f"{n}. **{sub.title}**: {sub.goal}" + (w.per.format(cited=cited) if cited else "")
        )
    if outcomes:
        lines += ["", w.subtasks, ""]
        for o in outcomes:
            lines.append(
                w.outcome.format(
                    title=o.title,
                    mode=w.modes.get(o.mode, o.mode),
                    calls=o.tool_calls,
                    findings=o.findings,
                    summary=" ".join(o.summary.split()),
                )
            )
    lines += ["", w.findings, ""]
    if not findings:
        lines.append(w.no_findings if workspace else w.not_audited)
    ordered = sorted(findings, key=lambda f: (_ORDER.get(f.severity, 9), f.file, f.line))
    for n, f in enumerate(ordered, 1):
        lines += [
            f"### {n}. [{w.severity.get(f.severity, f.severity)}] {f.title}",
            "",
            w.evidence.format(where=f"`{f.file}:{f.line}`", code=_inline(f.code)),
        ]
        for k in f.knowledge:
            cited = w.cited.format(section=k.section, document=k.document, page=k.page)
            lines.append(w.knowledge.format(cited=cited))
        if f.rule.startswith("zhixing."):  # the built-in pack's: say which rule found it
            confidence = w.severity.get(f.confidence, f.confidence) or "-"
            lines.append(w.rule.format(rule=f.rule, pack=w.builtin_pack, confidence=confidence))
        if f.trace:
            lines.append(w.flow.format(steps=_inline(" → ".join(f.trace))))
        if f.disagreed:
            lines.append(w.disagreed.format(reason=_inline(f.disagreed)))
        if f.note:
            lines.append(w.note_label.format(note=w.notes.get(f.note, f.note)))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
