"""The task agent's nodes: each is `(state, runtime) -> partial update`, and does one thing.

    research -> plan -> replan -> execute* -> report

Every node reports what it did on LangGraph's custom stream: `{"node": name, ...}`; the agentic
search's own events pass through with `"phase": "research"` (or `"subtask"` inside a subtask).
With an LLM, plan and replan make one structured call each and execute drives the subtask with
the model (core/task/turns.py: tool calling, structured turns, or offline with the model
reviewing); a failed LLM step falls back to the offline heuristic, and the event says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from ..agents.memory import HISTORY_TURNS, resolve_followup, turn_record
from ..agents.steps import call_or_none
from ..audit import AuditResult
from ..errors import LLMError
from ..llm.boundary import tidy_list
from ..llm.prompts import Prompt, T
from ..text.language import is_chinese
from ..trace import (
    AnalysisEvent,
    BudgetEvent,
    FindingEvent,
    ReplanEvent,
    ReportEvent,
    ResearchEvent,
    ResearchProbeEvent,
    SubtaskDoneEvent,
    SubtaskEvent,
    TaskPlanEvent,
    TraceEvent,
    with_phase,
)
from . import confirm, dataflow, offline, planning, turns
from .audit_rules import sections_of, topic_for
from .configuration import TaskContext
from .prompts import TASK_PLAN, TASK_REPLAN, RevisedPlan, TaskPlan
from .report import no_workspace_warning, render_report
from .state import (
    Finding,
    KnowledgeRef,
    Subtask,
    SubtaskOutcome,
    TaskState,
    knowledge_ref,
)
from .tools import ToolBox
from .workspace import Workspace

__all__ = ["execute", "plan", "replan", "report", "research"]

log = logging.getLogger(__name__)

_PROBE_HITS = 3
_EXCERPT_CHARS = 500
_FILES_SHOWN = 80
# What a model's plan step may hold; longer text is the model pasting, not planning.
_STEP_CHARS = 300


def _emit(runtime: Runtime[TaskContext], event: TraceEvent) -> None:
    runtime.stream_writer(event)


def _call(
    runtime: Runtime[TaskContext], role: Prompt[T], variables: Mapping[str, object]
) -> T | None:
    """One structured LLM call, or None offline or when it failed (logged, and the step falls
    back to its heuristic)."""
    return call_or_none(runtime.context.llm, role, variables, step=f"task {role.name}")


def _numbered(refs: list[KnowledgeRef]) -> str:
    return "\n".join(
        f"[{n}] {r.document} · {r.section} · p.{r.page}: {r.text[:_EXCERPT_CHARS]}"
        for n, r in enumerate(refs, 1)
    )


def _files(ctx: TaskContext) -> str:
    if ctx.workspace is None:
        return "(no workspace)"
    return "\n".join(ctx.workspace.list_files(limit=_FILES_SHOWN)) or "(empty)"


# --- research ---------------------------------------------------------------------------------


def research(state: TaskState, runtime: Runtime[TaskContext]) -> dict[str, Any]:
    """Search the knowledge for the task itself (the agentic loop); with a workspace, also look
    up the clauses of the known audit topics, so the re-plan can see which of them the knowledge
    has (one search each, no model call)."""
    ctx = runtime.context
    if ctx.llm is not None:  # said before any call is made
        parts = ctx.call_budget()
        _emit(runtime, BudgetEvent(node="budget", calls=sum(parts.values()), parts=parts))
    # A follow-up task ("now the same for the upload module") is read against the earlier ones.
    question = resolve_followup(state["task"], state.get("turns", [])[-HISTORY_TURNS:])
    result = ctx.research(question, lambda e: _emit(runtime, with_phase(e, "research")))
    refs = _distinct([knowledge_ref(h) for h in result.evidence])
    analysis = _analyse(runtime, ctx.workspace) if ctx.workspace is not None else None
    if ctx.workspace is not None:  # with a model too: its plan adds to the offline one
        lookup = ctx.lookup or ctx.search
        for topic in offline.probe_topics():
            found = [
                ref
                for ref in (knowledge_ref(h) for h in lookup(topic.probe, _PROBE_HITS))
                if topic_for(ref.section) is topic
            ]
            refs = _distinct(refs + found)
            _emit(
                runtime,
                ResearchProbeEvent(
                    node="probe",
                    probe=topic.probe,
                    topic=topic.key,
                    sections=sorted({f"{r.section} ({r.document}, p.{r.page})" for r in found}),
                ),
            )
    answer = str(result.answer.to_json().get("answer", ""))
    _emit(
        runtime,
        ResearchEvent(
            node="research",
            evidence=len(refs),
            sections=list(dict.fromkeys(f"{r.section} ({r.document}, p.{r.page})" for r in refs)),
            answer=answer,
        ),
    )
    # The run's own state starts here (a thread's last run left its values in the checkpoint).
    return {"research": refs, "analysis": analysis, "confirmations": 0, "tool_turns": None}


def _analyse(runtime: Runtime[TaskContext], workspace: Workspace) -> AuditResult:
    """The data-flow analysis of the workspace, its progress reported every tenth of it."""
    started = time.monotonic()
    step = 0

    def progress(done: int, total: int) -> None:
        nonlocal step
        if total >= 200 and done * 10 // total > step:
            step = done * 10 // total
            _emit(runtime, _analysis_event(False, done, total, 0, time.monotonic() - started, 0))

    result = dataflow.analyse(workspace, progress)
    files = result.files_scanned
    event = _analysis_event(
        True, files, files, len(result.findings), result.seconds, len(result.parse_errors)
    )
    _emit(runtime, event)
    return result


def _analysis_event(
    done: bool, files: int, total: int, findings: int, seconds: float, errors: int
) -> AnalysisEvent:
    return AnalysisEvent(
        node="analysis",
        done=done,
        files=files,
        total=total,
        findings=findings,
        seconds=round(seconds, 2),
        parse_errors=errors,
    )


def _distinct(refs: list[KnowledgeRef]) -> list[KnowledgeRef]:
    seen: set[int] = set()
    out = []
    for ref in refs:
        if ref.chunk_id not in seen:
            seen.add(ref.chunk_id)
            out.append(ref)
    return out


# --- plan and re-plan -------------------------------------------------------------------------


def plan(state: TaskState, runtime: Runtime[TaskContext]) -> dict[str, Any]:
    """Write the first plan (the "before" the report and the UI show)."""
    ctx = runtime.context
    result: TaskPlan | None = _call(
        runtime,
        TASK_PLAN,
        {
            "task": state["task"],
            "knowledge_bases": ", ".join(ctx.knowledge_bases) or "(all)",
            "research": _numbered(state.get("research", [])[:6]) or "(nothing)",
            "files": _files(ctx),
        },
    )
    steps = tidy_list(result.steps, limit=_STEP_CHARS, max_items=8) if result is not None else []
    if not steps:
        steps = offline.first_plan(
            state["task"],
            knowledge_bases=ctx.knowledge_bases,
            workspace=ctx.workspace is not None,
        )
    _emit(runtime, TaskPlanEvent(node="task_plan", plan=steps, llm=result is not None))
    return {"plan_before": steps}


def replan(state: TaskState, runtime: Runtime[TaskContext]) -> dict[str, Any]:
    """Revise the plan into concrete subtasks, each tied to the knowledge that defines it."""
    ctx = runtime.context
    refs = state.get("research", [])
    result: RevisedPlan | None = None
    if refs:
        result = _call(
            runtime,
            TASK_REPLAN,
            {
                "task": state["task"],
                "plan": "\n".join(f"- {s}" for s in state.get("plan_before", [])),
                "knowledge": _numbered(refs),
                "files": _files(ctx),
                "max_subtasks": ctx.max_subtasks,
            },
        )
    offline_plan = offline.revised_plan(
        sections_of(refs), max_subtasks=ctx.max_subtasks, chinese=is_chinese(state["task"])
    )
    model_plan = planning.from_model(result, refs) if result is not None else []
    subtasks, by_llm = planning.bounded(model_plan, offline_plan, max_subtasks=ctx.max_subtasks)
    if not subtasks:  # the knowledge named nothing concrete: the task itself is the one subtask
        subtasks = [Subtask(title=state["task"], goal=state["task"], knowledge=tuple(refs[:3]))]
    subtasks = subtasks[: ctx.max_subtasks]
    analysis = state.get("analysis")
    if analysis is not None:  # what no clause covers: the built-in rule pack's subtask
        chinese = is_chinese(state["task"])
        if len(subtasks) == ctx.max_subtasks and dataflow.unclaimed(analysis, subtasks):
            subtasks = subtasks[:-1]  # the pack takes the last place
        builtin = dataflow.builtin_subtask(analysis, subtasks, chinese=chinese)
        if builtin is not None:
            subtasks = [*subtasks, builtin]
    _emit(
        runtime,
        ReplanEvent(node="replan", plan=[s.to_json() for s in subtasks], llm=by_llm),
    )
    return {"subtasks": subtasks, "cursor": 0}


# --- execute ----------------------------------------------------------------------------------


def execute(state: TaskState, runtime: Runtime[TaskContext]) -> dict[str, Any]:
    """Carry out the next subtask with tools (the model's choice, or the offline scan)."""
    ctx = runtime.context
    index = state.get("cursor", 0)
    subtask = state["subtasks"][index]
    number = index + 1
    _emit(
        runtime,
        SubtaskEvent(node="subtask", subtask=number, title=subtask.title, goal=subtask.goal),
    )
    box = ToolBox(ctx, lambda e: _emit(runtime, e), number, list(subtask.knowledge))
    notes: list[str] = []
    findings: list[Finding] = []
    chinese = is_chinese(state["task"])
    mode = "offline"
    calls = 0
    tool_turns = state.get("tool_turns")
    if subtask.topic == dataflow.BUILTIN_TOPIC:
        mode = "built-in"
        summary = ""
    elif ctx.chat is not None:
        try:
            driven = turns.drive(state["task"], subtask, box, tool_turns, chinese=chinese)
            findings, summary, mode, calls = (
                driven.findings,
                driven.summary,
                driven.way,
                driven.tool_calls,
            )
            tool_turns = driven.tool_turns
        except LLMError as exc:
            log.warning("Subtask %d falls back to the offline scan: %s", number, exc)
            notes.append(str(exc))
            mode = "offline (LLM failed)"
    if mode in ("offline", "offline (LLM failed)"):
        if ctx.workspace is not None:
            findings, summary = offline.scan(subtask, box, chinese=chinese)
        else:
            summary = offline.consult(subtask, box, chinese=chinese)
        calls = len(box.calls)
    analysis = state.get("analysis")
    if analysis is not None:
        flows = dataflow.findings_for(subtask, analysis, state["subtasks"])
        findings = dataflow.merge(findings, flows)
        summary = (summary + " " + dataflow.summary(flows, chinese=chinese)).strip()
    # A spot an earlier subtask reports already is reported (and reviewed) once.
    earlier = state.get("findings", [])
    findings = [f for f in findings if not any(dataflow.same_spot(k, f) for k in earlier)]
    spent = state.get("confirmations", 0)
    if ctx.llm is not None and findings:
        reviewed = confirm.review(findings, ctx, spent)
        spent += reviewed.calls
        findings = reviewed.findings
        summary = (summary + " " + confirm.summary(reviewed, chinese=chinese)).strip()
    for finding in findings:
        _emit(runtime, FindingEvent(node="finding", subtask=number, finding=finding.to_json()))
    outcome = SubtaskOutcome(
        index=number,
        title=subtask.title,
        summary=summary,
        tool_calls=calls,
        mode=mode,
        findings=len(findings),
        notes=tuple(notes),
    )
    _emit(
        runtime,
        SubtaskDoneEvent(
            node="subtask_done",
            subtask=number,
            title=subtask.title,
            summary=summary,
            findings=len(findings),
            tool_calls=calls,
            mode=mode,
        ),
    )
    return {
        "cursor": number,
        "findings": findings,
        "done": [outcome],
        "confirmations": spent,
        "tool_turns": tool_turns,
    }


# --- report -----------------------------------------------------------------------------------


def report(state: TaskState, runtime: Runtime[TaskContext]) -> dict[str, Any]:
    """Write the Markdown report: summary, plan before and after, findings with their sources;
    and the run's warnings (no workspace attached: nothing was audited)."""
    ctx = runtime.context
    workspace = ctx.workspace is not None
    text = render_report(
        task=state["task"],
        plan_before=state.get("plan_before", []),
        subtasks=state.get("subtasks", []),
        outcomes=state.get("done", []),
        findings=state.get("findings", []),
        knowledge_bases=ctx.knowledge_bases,
        workspace=workspace,
    )
    warnings = [] if workspace else [no_workspace_warning(state["task"])]
    _emit(runtime, ReportEvent(node="report", findings=len(state.get("findings", []))))
    summary = f"{len(state.get('findings', []))} findings. " + text[:300]
    turn = turn_record(state["task"], state["task"], summary, ctx.knowledge_bases)
    return {"report": text, "warnings": warnings, "turns": [turn]}
