"""Running a compiled LangGraph graph with live events: the one loop both agents share.

Nodes report progress with the stream writer ("custom" mode); the state after each step comes
in "values" mode, and the last one is the run's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from ..trace import TraceEvent

__all__ = ["stream_run"]


def stream_run(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    inputs: Mapping[str, Any],
    context: Any,
    on_event: Callable[[Any], None] | None = None,  # an EventSink or an AskSink
    config: Mapping[str, Any] | None = None,
) -> tuple[list[TraceEvent], dict[str, Any]]:
    """Run `graph`, handing each node's event to `on_event` as it happens; return every event
    and the final state. On a thread (a checkpointed graph, `config` naming the thread) the
    checkpoint is written once, when the run ends: a conversation remembers finished turns."""
    events: list[TraceEvent] = []
    final: dict[str, Any] = {}
    settings = cast(RunnableConfig, dict(config or {}))
    thread = settings.get("configurable", {}).get("thread_id")
    stream = graph.stream(
        dict(inputs),
        context=context,
        stream_mode=["custom", "values"],
        config=settings,
        durability="exit" if thread else None,
    )
    for mode, chunk in stream:
        if mode == "custom":  # a node's event (core/trace.py)
            event = cast(TraceEvent, chunk)
            if event["node"] != "answer_text":  # the answer as it grows: shown, never kept
                events.append(event)
            if on_event is not None:
                on_event(event)
        else:  # the state after a step
            final = cast(dict[str, Any], chunk)
    return events, final
