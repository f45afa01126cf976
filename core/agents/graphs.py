"""Compiling both agents' graphs from one wiring: plain, for Zhixing's own runs (the nodes
reach their dependencies through the runtime context), or bound to a host's JSON options
(binding.py). Each agent's flow.py keeps its own wiring, routers and result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.typing import ContextT, StateT

from .binding import Resolver, RunContexts

__all__ = ["Flow", "Wire", "add_nodes"]

# Adds a graph's nodes and edges; each node goes through `node(name, fn)` on its way in.
Wire = Callable[[StateGraph[Any, Any, Any, Any], Callable[[str, Any], Any]], None]


def add_nodes(
    graph: StateGraph[Any, Any, Any, Any],
    node: Callable[[str, Any], Any],
    functions: Sequence[Callable[..., Any]],
) -> None:
    """Add each node function under its own name, through `node`."""
    for function in functions:
        graph.add_node(function.__name__, node(function.__name__, function))


@dataclass(frozen=True)
class Flow(Generic[StateT, ContextT]):
    """One agent's graph: its state and context schemas, its wiring, its name, and the node a
    run enters at (where a bound graph resolves the run's context afresh)."""

    state: type[StateT]
    context: type[ContextT]
    wire: Wire
    name: str
    entry: str
    # What a host (Studio) sends and gets back: a few fields, not the whole state. The input's
    # required keys are checked at the entry (binding.py). Zhixing's own runs use the state.
    inputs: type[Any] | None = None
    outputs: type[Any] | None = None

    def build(
        self, checkpointer: BaseCheckpointSaver[Any] | None = None
    ) -> CompiledStateGraph[StateT, ContextT, StateT, StateT]:
        """Wire the nodes and routers into the compiled graph (with the conversations'
        checkpointer when runs go on threads)."""
        graph = StateGraph(self.state, context_schema=self.context)
        self.wire(graph, lambda _, fn: fn)
        return graph.compile(name=self.name, checkpointer=checkpointer)

    def bind(
        self, resolve: Resolver, options: type[Any]
    ) -> CompiledStateGraph[StateT, Any, Any, Any]:
        """The same graph for a host that runs it with JSON options (`options`, a TypedDict, is
        its context schema): each node gets `resolve(options)`, the nodes' context
        (binding.py; LangGraph Studio through cli/studio.py). It takes `inputs` and returns
        `outputs`, where the flow names them."""
        graph = StateGraph(
            self.state,
            context_schema=options,
            input_schema=self.inputs,
            output_schema=self.outputs,
        )
        required: frozenset[str] = getattr(self.inputs, "__required_keys__", frozenset())
        self.wire(graph, RunContexts(resolve, entry=self.entry, required=required).bind)
        return graph.compile(name=self.name)
