"""The task agent without an LLM: a generic first plan, a plan revised from the knowledge's
headings, and a pattern scan per subtask (docs/architecture.md §7, offline mode).

Everything here treats document and workspace text as data: headings and backticked
identifiers become subtasks and grep patterns, nothing in them is ever followed as an
instruction, and the scan only greps (through the bounded, traced `ToolBox`).

What it writes in its own words (plans, goals, summaries) is in the task's language: Chinese
for a task asked in Chinese (`core.answer.is_chinese`), English otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..text.language import is_chinese
from .audit_rules import (
    TOPICS,
    Rule,
    Section,
    Topic,
    clause_identifiers,
    identifier_pattern,
    topic_for,
    topic_named,
)
from .state import HEURISTIC_NOTE, Finding, Subtask
from .tools import ToolBox
from .workspace import GrepHit

__all__ = ["consult", "first_plan", "revised_plan", "scan"]

_SAME_SPOT = 3  # findings of one subtask this close in one file are one finding


def first_plan(task: str, *, knowledge_bases: Sequence[str], workspace: bool) -> list[str]:
    """The plan before research has shaped it: generic steps for the task as stated."""
    if is_chinese(task):
        kbs = "、".join(f"@{k}" for k in knowledge_bases) or "所附的知识库"
        steps = [f"在 {kbs} 中查找适用于该任务的规则和要求：{task.strip()}"]
        if workspace:
            steps += ["列出工作区的文件，找出要检查的代码", "逐条对照适用的要求检查代码"]
        else:
            steps += [
                "没有附加工作区：不审计代码，只整理每条适用要求的内容",
                "梳理每条适用要求具体要求什么",
            ]
        steps.append("撰写报告：摘要、修订后的计划、附证据和出处的发现")
        return steps
    kbs = "、".join(f"@{k}" for k in knowledge_bases) or "the attached knowledge"
    steps = [f"Research {kbs} for the rules and requirements that apply to: {task.strip()}"]
    if workspace:
        steps += [
            "List the workspace files and identify the code to examine",
            "Check the code against every applicable requirement",
        ]
    else:
        steps += [
            "No workspace is attached: audit no code, only gather what the requirements say",
            "Work out what each applicable requirement asks for",
        ]
    steps.append("Write the report: summary, revised plan, findings with evidence and sources")
    return steps


def revised_plan(
    sections: Sequence[Section], *, max_subtasks: int, chinese: bool = False
) -> list[Subtask]:
    """One subtask per section that names a known audit topic (or forbids named APIs); the
    goals in Chinese when `chinese`."""
    subtasks: list[Subtask] = []
    seen: set[str] = set()
    for section in sections:
        topic = topic_for(section.heading, section.text)
        where = f"{section.document}, p.{section.page}"
        if topic is not None:
            if topic.key in seen:
                continue
            seen.add(topic.key)
            goal = (
                f"按「{section.heading}」（{section.document}，第 {section.page} 页）的定义查找"
                f" {topic.name.lower()} 问题。"
                if chinese
                else f"Look for {topic.name.lower()} as {section.heading} ({where}) defines it."
            )
            patterns = tuple(r.pattern for r in topic.rules)
        else:
            names = clause_identifiers(section.text, prohibited_only=True)
            if not names:
                continue  # scope, terms, introductions: nothing to check code against
            goal = (
                f"查找「{section.heading}」（{section.document}，第 {section.page} 页）禁止的"
                f" API：{', '.join(names)}。"
                if chinese
                else f"Look for the APIs {section.heading} ({where}) forbids: {', '.join(names)}."
            )
            patterns = (identifier_pattern(names),)
        subtasks.append(
            Subtask(
                title=section.heading,
                goal=goal,
                knowledge=tuple(section.refs),
                topic=topic.key if topic else "",
                patterns=patterns,
            )
        )
    return subtasks[:max_subtasks]


def probe_topics() -> list[Topic]:
    """The topics whose clauses the offline research looks up when it audits a workspace."""
    return list(TOPICS)


def scan(subtask: Subtask, box: ToolBox, *, chinese: bool = False) -> tuple[list[Finding], str]:
    """Grep the workspace for the subtask's patterns; return candidate findings and a summary
    (in Chinese when `chinese`)."""
    topic = topic_named(subtask.topic)
    text = "\n".join(k.text for k in subtask.knowledge)
    names = clause_identifiers(text, prohibited_only=True)
    leads: list[GrepHit] = []
    if names:
        leads = box.grep_hits(identifier_pattern(names)) or []
    if topic is None:
        findings = [
            _finding(
                subtask,
                f"Use of an API that {subtask.title} forbids",
                "low",
                hit,
                rule="zhixing.clause.forbidden-api",
                confidence="low",
            )
            for hit in leads
        ]
    else:
        findings = _topic_findings(subtask, topic, box)
    findings = _distinct(findings)
    summary = (
        f"{len(findings)} 项候选发现；条款点名的 API 出现在 {len(leads)} 行。"
        if chinese
        else f"{len(findings)} candidate finding(s); the APIs the clause names occur on"
        f" {len(leads)} line(s)."
    )
    return findings, summary


def consult(subtask: Subtask, box: ToolBox, *, chinese: bool = False) -> str:
    """Without a workspace: look the subtask up in the knowledge; return the summary."""
    box.run("search_knowledge", {"query": subtask.title})
    if chinese:
        return f"查阅了知识库中关于「{subtask.title}」的内容；没有工作区，未检查代码。"
    return f"Consulted the knowledge on {subtask.title}; no workspace to check."


def _topic_findings(subtask: Subtask, topic: Topic, box: ToolBox) -> list[Finding]:
    aux: dict[tuple[str, str], list[GrepHit]] = {}

    def lines_of(pattern: str, glob: str) -> list[GrepHit]:
        if (pattern, glob) not in aux:
            aux[(pattern, glob)] = box.grep_hits(pattern, glob) or []
        return aux[(pattern, glob)]

    found: list[Finding] = []
    for rule in topic.rules:
        hits = box.grep_hits(rule.pattern, rule.glob)
        if not hits:
            continue
        for hit in hits:
            if _excused(rule, hit, lines_of):
                continue
            found.append(
                _finding(
                    subtask,
                    f"{topic.name}: {rule.title}",
                    topic.severity,
                    hit,
                    rule=f"zhixing.pattern.{topic.key}",
                    cwe=topic.cwes[0] if topic.cwes else 0,
                    confidence="medium",
                )
            )
    return found


def _excused(rule: Rule, hit: GrepHit, lines_of: Callable[[str, str], list[GrepHit]]) -> bool:
    """Whether an exception of the rule holds for this match (a safe look-alike)."""
    if rule.unless_line and re.search(rule.unless_line, hit.text):
        return True
    if rule.unless_file and any(h.path == hit.path for h in lines_of(rule.unless_file, rule.glob)):
        return True
    if rule.unless_near and any(
        h.path == hit.path and abs(h.line - hit.line) <= rule.window
        for h in lines_of(rule.unless_near, rule.glob)
    ):
        return True
    return bool(rule.requires_file) and not any(
        h.path == hit.path for h in lines_of(rule.requires_file, rule.glob)
    )


def _finding(
    subtask: Subtask,
    title: str,
    severity: str,
    hit: GrepHit,
    *,
    rule: str,
    confidence: str,
    cwe: int = 0,
) -> Finding:
    return Finding(
        title=title,
        severity=severity,
        file=hit.path,
        line=hit.line,
        code=hit.text,
        knowledge=subtask.knowledge[:2],
        subtask=subtask.title,
        confirmed=False,
        note=HEURISTIC_NOTE,
        cwe=cwe,
        rule=rule,
        confidence=confidence,
    )


def _distinct(findings: list[Finding]) -> list[Finding]:
    kept: list[Finding] = []
    for f in sorted(findings, key=lambda f: (f.file, f.line)):
        if not any(k.file == f.file and abs(k.line - f.line) <= _SAME_SPOT for k in kept):
            kept.append(f)
    return kept
