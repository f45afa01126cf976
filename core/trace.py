"""The trace events of the two agents (docs/architecture.md §6, §7): one TypedDict per event.

Every node of the agentic search (`core/ask/`) and of the task agent (`core/task/`)
reports what it did as one of these, tagged by `node`. They travel as plain dicts (LangGraph's
custom stream, the run log, `--json`), so a stored trace reads back without a schema; the types
say what each front end may rely on. Each front end reads them in one dispatcher: the web app's
`RoundsView` and `TaskView` (app/rounds.py, app/tasks.py), the CLI's `trace_line` and
`task_line` (cli/main.py).

The task agent passes the agentic search's events through with `phase` set ("research", or
"subtask" with the subtask's number), so its trace is `TaskEvent | AskEvent`. Every event type
has a tag of its own, the search's and the task agent's alike, so a dispatcher that compares
`event["node"]` is narrowed to the one type by the type checker, with no cast; `is_search` tells
the search's events apart as a whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict, cast

from typing_extensions import TypeIs

__all__ = [
    "AnalysisEvent",
    "AnswerEvent",
    "AnswerTextEvent",
    "AskEvent",
    "AskSink",
    "BudgetEvent",
    "EvaluateEvent",
    "EventSink",
    "FindingEvent",
    "MergeEvent",
    "PlanEvent",
    "QueryHits",
    "RefineEvent",
    "ReplanEvent",
    "ReportEvent",
    "ResearchEvent",
    "ResearchProbeEvent",
    "RetrieveEvent",
    "SubtaskDoneEvent",
    "SubtaskEvent",
    "TaskEvent",
    "TaskPlanEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "TraceEvent",
    "is_search",
    "stored_search",
    "with_phase",
]


# --- the agentic search ---------------------------------------------------------------------


class _Phased(TypedDict):
    # Set by the task agent on the search events it passes through (see the module docstring).
    phase: NotRequired[Literal["research", "subtask"]]
    subtask: NotRequired[int]


class PlanEvent(_Phased):
    node: Literal["plan"]
    round: int
    aspects: list[str]
    queries: list[str]
    llm: bool
    resolved: NotRequired[str]  # a follow-up, as read with the conversation's earlier turns


class QueryHits(TypedDict):
    query: str
    aspect: str
    hits: int
    hits_by_strategy: dict[str, int]


class RetrieveEvent(_Phased):
    node: Literal["retrieve"]
    round: int
    queries: list[str]
    per_query: list[QueryHits]
    hits_by_strategy: dict[str, int]
    new_evidence: int
    evidence: int


class EvaluateEvent(_Phased):
    node: Literal["evaluate"]
    round: int
    sufficient: bool
    covered: list[str]
    missing: list[str]
    judge: Literal["llm", "coverage"]


class RefineEvent(_Phased):
    node: Literal["refine"]
    round: int
    missing: list[str]
    queries: list[str]  # empty: nothing new to ask, the loop goes on to merge
    llm: bool


class MergeEvent(_Phased):
    node: Literal["merge"]
    round: int
    evidence: int
    by_aspect: dict[str, int]


class AnswerEvent(_Phased):
    node: Literal["answer"]
    round: int
    found: bool


class AnswerTextEvent(_Phased):
    """The answer so far, as the model writes it (with a model that streams), citations already
    numbered as the final answer numbers them. Shown while it grows, never stored: the
    `answer` that follows is what counts."""

    node: Literal["answer_text"]
    round: int
    text: str


AskEvent = (
    PlanEvent
    | RetrieveEvent
    | EvaluateEvent
    | RefineEvent
    | MergeEvent
    | AnswerTextEvent
    | AnswerEvent
)


# --- the task agent -------------------------------------------------------------------------


class ResearchProbeEvent(TypedDict):
    node: Literal["probe"]
    probe: str  # the offline re-plan's query for a known audit topic
    topic: str
    sections: list[str]


class ResearchEvent(TypedDict):
    node: Literal["research"]
    evidence: int
    sections: list[str]
    answer: str


class BudgetEvent(TypedDict):
    node: Literal["budget"]  # before the run, with a model: the most calls it may make
    calls: int
    parts: dict[str, int]  # plan, subtasks, confirmations


class AnalysisEvent(TypedDict):
    node: Literal["analysis"]  # the data-flow analysis of the workspace's code (core.audit)
    done: bool  # False: progress while files are parsed (files of total so far)
    files: int
    total: int
    findings: int
    seconds: float
    parse_errors: int


class TaskPlanEvent(TypedDict):
    node: Literal["task_plan"]  # the task's plan before the research revised it
    plan: list[str]
    llm: bool


class ReplanEvent(TypedDict):
    node: Literal["replan"]
    plan: list[dict[str, Any]]  # Subtask.to_json()
    llm: bool


class SubtaskEvent(TypedDict):
    node: Literal["subtask"]
    subtask: int
    title: str
    goal: str


class ToolCallEvent(TypedDict):
    node: Literal["tool_call"]
    subtask: int
    step: int
    tool: str
    args: dict[str, Any]


class ToolResultEvent(TypedDict):
    node: Literal["tool_result"]
    subtask: int
    step: int
    tool: str
    ok: bool
    output: str


class FindingEvent(TypedDict):
    node: Literal["finding"]
    subtask: int
    finding: dict[str, Any]  # Finding.to_json()


class SubtaskDoneEvent(TypedDict):
    node: Literal["subtask_done"]
    subtask: int
    title: str
    summary: str
    findings: int
    tool_calls: int
    mode: str


class ReportEvent(TypedDict):
    node: Literal["report"]
    findings: int


TaskEvent = (
    BudgetEvent
    | AnalysisEvent
    | ResearchProbeEvent
    | ResearchEvent
    | TaskPlanEvent
    | ReplanEvent
    | SubtaskEvent
    | ToolCallEvent
    | ToolResultEvent
    | FindingEvent
    | SubtaskDoneEvent
    | ReportEvent
)

TraceEvent = AskEvent | TaskEvent

# What a front end hands a run to see its events as they happen: a task run's sink takes every
# event; an `ask`'s needs to take only the search's.
EventSink = Callable[[TraceEvent], None]
AskSink = Callable[[AskEvent], None]


# The search's tags: no task event has one of them (tests/test_trace_tags.py checks both).
SEARCH_NODES = frozenset(
    ("plan", "retrieve", "evaluate", "refine", "merge", "answer_text", "answer")
)


def is_search(event: TraceEvent) -> TypeIs[AskEvent]:
    """Whether an event is the agentic search's (alone, or inside a task run)."""
    return event["node"] in SEARCH_NODES


def stored_search(events: Sequence[Mapping[str, Any]]) -> list[AskEvent]:
    """A stored trace (plain dicts, from the run log or a notebook) read back as the search's
    events: those whose tag is one of the search's, in order; anything else is left out."""
    return [cast(AskEvent, dict(e)) for e in events if e.get("node") in SEARCH_NODES]


def with_phase(
    event: AskEvent, phase: Literal["research", "subtask"], subtask: int | None = None
) -> AskEvent:
    """A search's event as the task agent passes it on (see the module docstring)."""
    out = cast(AskEvent, dict(event))
    out["phase"] = phase
    if subtask is not None:
        out["subtask"] = subtask
    return out
