"""The task agent's graph (docs/architecture.md §7): its wiring, its routers, and `run_task`.

    research -> plan -> replan -> (execute)* -> report

`build_graph()` only wires; the routers are pure; the nodes live in `core.task.nodes` and reach
their dependencies through the runtime context (`TaskContext`). `run_task` streams the run and
hands each trace event to the caller as it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from ..agents.graphs import Flow, add_nodes
from ..agents.memory import on_thread
from ..agents.streaming import stream_run
from ..trace import EventSink, TraceEvent
from . import nodes
from .configuration import TaskContext
from .state import (
    Finding,
    KnowledgeRef,
    Subtask,
    SubtaskOutcome,
    TaskInput,
    TaskOutput,
    TaskState,
)

__all__ = [
    "TaskResult",
    "build_bound_graph",
    "build_graph",
    "route_after_execute",
    "route_after_replan",
    "run_task",
]


def route_after_replan(state: TaskState) -> Literal["execute", "report"]:
    """Execute the first subtask, or report at once when there is none."""
    return "execute" if state.get("subtasks") else "report"


def route_after_execute(state: TaskState) -> Literal["execute", "report"]:
    """Execute the next subtask while any is left; then report."""
    return "execute" if state.get("cursor", 0) < len(state.get("subtasks", [])) else "report"


def _wire(graph: StateGraph[Any, Any, Any, Any], node: Callable[[str, Any], Any]) -> None:
    add_nodes(graph, node, [nodes.research, nodes.plan, nodes.replan, nodes.execute, nodes.report])
    graph.add_edge(START, "research")
    graph.add_edge("research", "plan")
    graph.add_edge("plan", "replan")
    graph.add_conditional_edges("replan", route_after_replan, ["execute", "report"])
    graph.add_conditional_edges("execute", route_after_execute, ["execute", "report"])
    graph.add_edge("report", END)


_FLOW = Flow(
    TaskState,
    TaskContext,
    _wire,
    name="task_agent",
    entry="research",
    inputs=TaskInput,
    outputs=TaskOutput,
)
build_graph = _FLOW.build  # the compiled graph, with a checkpointer when runs go on threads
build_bound_graph = _FLOW.bind  # the graph for a host (LangGraph Studio) that runs it with JSON


@dataclass
class TaskResult:
    """The outcome of one task run: both plans, the findings, the report and the trace.

    `workspace` says whether a workspace was attached; without one no code was audited, and
    `warnings` says so in a sentence in the task's language (the report opens with it too).
    """

    task: str
    plan_before: list[str]
    plan_after: list[Subtask]
    findings: list[Finding]
    report: str
    subtasks: list[SubtaskOutcome] = field(default_factory=list)
    research: list[KnowledgeRef] = field(default_factory=list)
    events: list[TraceEvent] = field(default_factory=list)
    workspace: bool = True
    warnings: list[str] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call of the run, in order: {"subtask", "step", "tool", "args"}."""
        return [
            {"subtask": e["subtask"], "step": e["step"], "tool": e["tool"], "args": e["args"]}
            for e in self.events
            if e["node"] == "tool_call"
        ]

    def to_json(self) -> dict[str, Any]:
        """The `run --json` shape (docs/architecture.md §9)."""
        return {
            "task": self.task,
            "plan_before": list(self.plan_before),
            "plan_after": [s.to_json() for s in self.plan_after],
            "report": self.report,
            "findings": [f.to_json() for f in self.findings],
            "workspace": self.workspace,
            "warnings": list(self.warnings),
        }


# Compiling is pure wiring, so one compiled graph serves every run (per checkpointer).
_graph = cache(build_graph)


def run_task(
    task: str,
    context: TaskContext,
    on_event: EventSink | None = None,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    thread: str | None = None,
) -> TaskResult:
    """Carry out a task against the attached knowledge (and workspace), reporting each step.

    With a `checkpointer` and a `thread` the run continues that thread: a follow-up task is
    researched with the earlier tasks in mind (core/agents/memory.py)."""
    fresh: dict[str, Any] = {"findings": [], "done": []}
    inputs, checkpointer, config = on_thread({"task": task}, fresh, checkpointer, thread)
    # research, plan, replan, report, one step per subtask, and room to spare
    config["recursion_limit"] = context.max_subtasks + 10
    events, final = stream_run(_graph(checkpointer), inputs, context, on_event, config)
    return TaskResult(
        task=task,
        plan_before=list(final.get("plan_before", [])),
        plan_after=list(final.get("subtasks", [])),
        findings=list(final.get("findings", [])),
        report=final.get("report", ""),
        subtasks=list(final.get("done", [])),
        research=list(final.get("research", [])),
        events=events,
        workspace=context.workspace is not None,
        warnings=list(final.get("warnings", [])),
    )
