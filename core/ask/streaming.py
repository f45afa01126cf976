"""Running a compiled LangGraph graph with live events: the one loop both agents share.

Nodes report progress with the stream writer ("custom" mode); the state after each step comes
in "values" mode, and the last one is the run's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.graph.state import CompiledStateGraph

__all__ = ["stream_run"]


def stream_run(
    graph: CompiledStateGraph,
    inputs: Mapping[str, Any],
    context: Any,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    config: Mapping[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run `graph`, handing each node's event to `on_event` as it happens; return every event
    and the final state. On a thread (a checkpointed graph, `config` naming the thread) the
    checkpoint is written once, when the run ends: a conversation remembers finished turns."""
    events: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    config = dict(config or {})
    stream = graph.stream(
        dict(inputs),
        context=context,
        stream_mode=["custom", "values"],
        config=config,
        durability="exit" if config.get("configurable", {}).get("thread_id") else None,
    )
    for mode, chunk in stream:
        if mode == "custom":
            events.append(chunk)
            if on_event is not None:
                on_event(chunk)
        else:
            final = chunk
    return events, final
