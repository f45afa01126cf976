"""Compiling both agents' graphs from one wiring: plain, for Zhixing's own runs (the nodes
reach their dependencies through the runtime context), or bound to a host's JSON options
(binding.py). Each agent's flow.py keeps its own `_wire`, routers and result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.typing import ContextT, StateT

from .binding import Resolver, RunContexts

__all__ = ["Wire", "compile_bound_graph", "compile_graph"]

# Adds a graph's nodes and edges; each node goes through `node(name, fn)` on its way in.
Wire = Callable[[StateGraph[Any, Any, Any, Any], Callable[[str, Any], Any]], None]


def compile_graph(
    state: type[StateT],
    context: type[ContextT],
    wire: Wire,
    *,
    name: str,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[StateT, ContextT, StateT, StateT]:
    """Wire the nodes as they are, with `context` as the context schema (and the
    conversations' checkpointer when runs go on threads)."""
    graph = StateGraph(state, context_schema=context)
    wire(graph, lambda _, fn: fn)
    return graph.compile(name=name, checkpointer=checkpointer)


def compile_bound_graph(
    state: type[StateT], options: type[Any], wire: Wire, *, name: str, resolve: Resolver, entry: str
) -> CompiledStateGraph[StateT, Any, StateT, StateT]:
    """The same graph for a host that runs it with JSON options (`options`, a TypedDict, is its
    context schema): each node gets `resolve(options)`, resolved afresh at `entry`."""
    graph = StateGraph(state, context_schema=options)
    wire(graph, RunContexts(resolve, entry=entry).bind)
    return graph.compile(name=name)
