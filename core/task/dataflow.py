"""The workspace's data-flow analysis (core.audit) as the task agent's findings.

The analysis runs once per task run, during research, over the workspace's Java files. Its
findings are handed out by weakness: a subtask whose clause belongs to a known topic
(`Topic.cwes`) gets the findings of that topic's CWEs, cited to the clause; what no clause of
the attached knowledge claims goes to one last subtask, the **built-in rule pack**, whose
findings name the rule they came from instead of a clause. So the knowledge decides which
clause a finding is reported under and the pack makes sure no weakness is dropped because
the knowledge base has no section on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..audit import BUILTIN_RULES, AuditFinding, AuditResult, audit_tree
from .audit_rules import TOPICS, Topic, topic_named
from .state import HEURISTIC_NOTE, Finding, Subtask
from .workspace import Workspace

__all__ = [
    "BUILTIN_TOPIC",
    "analyse",
    "builtin_subtask",
    "claimed_cwes",
    "findings_for",
    "merge",
    "same_spot",
    "summary",
    "unclaimed",
]

BUILTIN_TOPIC = "builtin"
_SAME_SPOT = 3  # a finding this close to another in the same file is the same finding
_SEVERITY = {"high": "high", "medium": "medium", "low": "low"}
_RULE_TITLES = {r.id: r.title for r in BUILTIN_RULES}


def analyse(
    workspace: Workspace, progress: Callable[[int, int], None] | None = None
) -> AuditResult:
    """Analyse the workspace's Java code (the whole tree, read-only)."""
    return audit_tree(workspace.root, progress=progress)


def claimed_cwes(subtasks: Iterable[Subtask]) -> set[int]:
    """The weaknesses the plan's clauses cover (their topics' CWE ids)."""
    cwes: set[int] = set()
    for subtask in subtasks:
        topic = topic_named(subtask.topic)
        if topic is not None:
            cwes.update(topic.cwes)
    return cwes


def unclaimed(result: AuditResult, subtasks: Iterable[Subtask]) -> list[AuditFinding]:
    """The analysis's findings whose weakness no subtask's clause covers."""
    claimed = claimed_cwes(subtasks)
    return [f for f in result.findings if f.cwe not in claimed]


def builtin_subtask(
    result: AuditResult, subtasks: Sequence[Subtask], *, chinese: bool
) -> Subtask | None:
    """The last subtask, for what the knowledge has no clause on; None when nothing is left."""
    left = unclaimed(result, subtasks)
    if not left:
        return None
    names = sorted({_topic_name(f.cwe) for f in left})
    if chinese:
        title = "内置规则包：知识库未覆盖的弱点"
        goal = f"报告知识库没有条款覆盖、由内置规则包的数据流分析发现的问题：{'、'.join(names)}。"
    else:
        title = "Built-in rule pack: weaknesses the knowledge does not cover"
        goal = (
            "Report what the built-in rule pack's data-flow analysis found where the attached"
            f" knowledge has no clause: {', '.join(names)}."
        )
    return Subtask(title=title, goal=goal, topic=BUILTIN_TOPIC)


def findings_for(subtask: Subtask, result: AuditResult, plan: Sequence[Subtask]) -> list[Finding]:
    """The analysis's findings that belong to this subtask, as task findings.

    A topic's subtask takes its CWEs' findings, cited to its clause; the built-in subtask takes
    what no clause of the plan covers, each naming its rule."""
    if subtask.topic == BUILTIN_TOPIC:
        return [_finding(f, subtask, builtin=True) for f in _one_per_flow(unclaimed(result, plan))]
    topic = topic_named(subtask.topic)
    if topic is None or not topic.cwes:
        return []
    mine = [f for f in result.findings if f.cwe in topic.cwes]
    return [_finding(f, subtask, builtin=False) for f in _one_per_flow(mine)]


def _one_per_flow(found: Sequence[AuditFinding]) -> list[AuditFinding]:
    """One finding per data flow. The analysis reports a flow into a helper method both at the
    call and at the sink (a scorer that counts files needs the call); a reader needs it once,
    at the sink, where the fix goes, with the call in its trace."""
    sinks = {(f.cwe, f.trace) for f in found if f.trace and (f.file, f.line) == _last(f)}
    return [
        f
        for f in found
        if not (f.trace and (f.file, f.line) != _last(f) and (f.cwe, f.trace) in sinks)
    ]


def _last(found: AuditFinding) -> tuple[str, int]:
    step = found.trace[-1]
    return step.file, step.line


def merge(first: list[Finding], extra: Sequence[Finding]) -> list[Finding]:
    """`first` (the model's or the line rules' findings), then each of `extra` that none of
    them (nor an earlier one of `extra`) reports already."""
    merged = list(first)
    for f in extra:
        if not any(same_spot(k, f) for k in merged):
            merged.append(f)
    return merged


def same_spot(a: Finding, b: Finding) -> bool:
    """One weakness at one spot: same file, a few lines apart, the same CWE (or one unknown; a
    model's finding has only its subtask's CWE, so it counts as unknown)."""
    near = a.file == b.file and abs(a.line - b.line) <= _SAME_SPOT
    claimed = a.cwe and b.cwe and "model" not in (a.rule, b.rule)
    return near and (a.cwe == b.cwe or not claimed)


def summary(flows: Sequence[Finding], *, chinese: bool) -> str:
    """One sentence on what the data-flow analysis gave a subtask ("" when nothing)."""
    if not flows:
        return ""
    if chinese:
        return f"数据流分析：{len(flows)} 项候选发现。"
    return f"Data-flow analysis: {len(flows)} candidate finding(s)."


def _finding(found: AuditFinding, subtask: Subtask, *, builtin: bool) -> Finding:
    return Finding(
        title=found.title,
        severity=_SEVERITY.get(found.confidence, "medium"),
        file=found.file,
        line=found.line,
        code=found.code,
        knowledge=() if builtin else subtask.knowledge[:2],
        subtask=subtask.title,
        confirmed=False,
        note=HEURISTIC_NOTE,
        cwe=found.cwe,
        rule=found.rule,
        confidence=found.confidence,
        trace=tuple(f"{s.file.rsplit('/', 1)[-1]}:{s.line} {s.note}" for s in found.trace),
    )


def _topic_name(cwe: int) -> str:
    topic: Topic | None = next((t for t in TOPICS if cwe in t.cwes), None)
    return topic.name if topic is not None else f"CWE-{cwe}"


def rule_title(rule: str) -> str:
    """The title of a built-in rule (its id when unknown)."""
    return _RULE_TITLES.get(rule, rule)
