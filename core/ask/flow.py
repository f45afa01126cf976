"""The agentic retrieval graph (docs/architecture.md §6): its wiring, its routers, and `run_agentic`.

    plan -> retrieve -> evaluate -> (refine -> retrieve -> evaluate)* -> merge -> answer
                                       ^------ answer found nothing after "sufficient" --'

(a not-found answer after a "sufficient" verdict opens another round while rounds remain).

`build_graph()` only wires; the routers are pure functions of the state; the nodes live in
`core.ask.nodes` (plan, retrieve, refine), `core.ask.judge` (evaluate) and `core.ask.answering`
(merge, answer), and reach their dependencies through the runtime context (`AgentContext`).
`run_agentic` streams the run, hands each trace event to the caller as it happens, and folds the
events into the per-round summary that `ask --json` prints (docs/architecture.md §9).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from ..agents.graphs import Flow, add_nodes
from ..agents.memory import on_thread
from ..agents.streaming import stream_run
from ..models import Hit
from ..trace import AskSink, TraceEvent
from . import answering, judge, nodes
from .configuration import AgentContext, AnswerLike
from .state import AgentState, AskInput, AskOutput

__all__ = [
    "AgenticResult",
    "build_bound_graph",
    "build_graph",
    "route_after_answer",
    "route_after_evaluate",
    "route_after_refine",
    "rounds_from_events",
    "run_agentic",
]


def route_after_evaluate(state: AgentState) -> Literal["merge", "refine"]:
    """Answer when the evidence suffices or the round budget is spent; else refine."""
    if state.get("sufficient") or state.get("round", 1) >= state.get("max_rounds", 1):
        return "merge"
    return "refine"


def route_after_refine(state: AgentState) -> Literal["retrieve", "merge"]:
    """Search again when refine found a new query; with none left, answer from what there is."""
    return "retrieve" if state.get("queries") else "merge"


def route_after_answer(state: AgentState) -> Literal["refine", "__end__"]:
    """End with the answer, unless it found nothing after a "sufficient": then search again."""
    return "refine" if state.get("again") else "__end__"


def _wire(graph: StateGraph[Any, Any, Any, Any], node: Callable[[str, Any], Any]) -> None:
    add_nodes(
        graph,
        node,
        [
            nodes.plan,
            nodes.retrieve,
            judge.evaluate,
            nodes.refine,
            answering.merge,
            answering.answer,
        ],
    )
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "retrieve")
    graph.add_edge("retrieve", "evaluate")
    graph.add_conditional_edges("evaluate", route_after_evaluate, ["merge", "refine"])
    graph.add_conditional_edges("refine", route_after_refine, ["retrieve", "merge"])
    graph.add_edge("merge", "answer")
    graph.add_conditional_edges("answer", route_after_answer, ["refine", END])


_FLOW = Flow(
    AgentState,
    AgentContext,
    _wire,
    name="agentic_retrieval",
    entry="plan",
    inputs=AskInput,
    outputs=AskOutput,
)
build_graph = _FLOW.build  # the compiled graph, with a checkpointer when runs go on threads
build_bound_graph = _FLOW.bind  # the graph for a host (LangGraph Studio) that runs it with JSON


@dataclass
class AgenticResult:
    """The outcome of one agentic run: the answer, the rounds, the merged evidence, the aspects."""

    answer: AnswerLike
    rounds: list[dict[str, Any]]
    evidence: list[Hit]
    aspects: list[str]
    events: list[TraceEvent] = field(default_factory=list)  # the full trace, for the run log

    def to_json(self) -> dict[str, Any]:
        """The `ask --json` shape: answer, found, citations and rounds (docs/architecture.md §9)."""
        answer = self.answer.to_json()
        return {
            "answer": answer["answer"],
            "found": answer["found"],
            "citations": answer["citations"],
            "method": answer.get("method", ""),
            "note": answer.get("note", ""),
            "rounds": self.rounds,
        }


def rounds_from_events(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    """Fold the retrieve and evaluate events into one summary per round, in round order."""
    rounds: dict[int, dict[str, Any]] = {}

    def summary(n: int) -> dict[str, Any]:
        empty = {"queries": [], "hits_by_strategy": {}, "new_evidence": 0}
        return rounds.setdefault(n, {"round": n, **empty, "sufficient": False, "missing": []})

    for event in events:
        if event["node"] == "retrieve":
            row = summary(event["round"])
            row["queries"] = list(event["queries"])
            row["hits_by_strategy"] = dict(event["hits_by_strategy"])
            row["new_evidence"] = event["new_evidence"]
        elif event["node"] == "evaluate":
            row = summary(event["round"])
            row["sufficient"] = event["sufficient"]
            row["missing"] = list(event["missing"])
    return [rounds[n] for n in sorted(rounds)]


# Compiling is pure wiring, so one compiled graph serves every run (per checkpointer).
_graph = cache(build_graph)


def run_agentic(
    question: str,
    context: AgentContext,
    on_event: AskSink | None = None,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    thread: str | None = None,
) -> AgenticResult:
    """Answer a question in up to `context.max_rounds` search rounds, reporting each step live.

    With a `checkpointer` and a `thread` (a conversation's id) the run continues that thread:
    a follow-up question is read with the earlier turns (core/agents/memory.py)."""
    fresh: dict[str, Any] = {"asked": [], "evidence": {}}
    inputs, checkpointer, config = on_thread({"question": question}, fresh, checkpointer, thread)
    events, final = stream_run(_graph(checkpointer), inputs, context, on_event, config)
    return AgenticResult(
        answer=final["answer"],
        rounds=rounds_from_events(events),
        evidence=list(final.get("merged", [])),
        aspects=list(final.get("aspects", [])),
        events=events,
    )
