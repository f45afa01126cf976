"""Graphs that carry their own dependencies, for hosts that start a run with JSON alone.

LangGraph Studio (`langgraph dev`) and other hosts run a graph with a plain JSON context, while
Zhixing's nodes reach their dependencies (search, answer, the model) through a context object
(`AgentContext`, `TaskContext`). A bound node turns the run's JSON options into that object
with `resolve` and hands it to the real node, so the host sees the same nodes and edges.

Resolving opens a home's stores, so one object serves a whole run: the entry node resolves it
afresh and the later nodes of the same run reuse it, keyed by the run's id (LangGraph's server
gives every run one), else its thread, else its options object. Contexts are frozen and hold no
run state (that is the graph's state: the task agent's analysis, its review budget), so a
context reused is the same as one resolved again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

__all__ = ["Resolver", "RunContexts"]

Resolver = Callable[[Any], Any]  # the run's context (JSON options or None) -> the nodes' context

_KEPT = 64  # runs remembered at once: more than a host runs in parallel


class RunContexts:
    """The nodes' context of each run of one bound graph."""

    def __init__(self, resolve: Resolver, entry: str) -> None:
        self._resolve, self._entry = resolve, entry
        self._lock = threading.Lock()
        self._runs: OrderedDict[Any, Any] = OrderedDict()

    def _context(self, runtime: Runtime[Any], fresh: bool) -> Any:
        info = runtime.execution_info
        key = (info and (info.run_id or info.thread_id)) or id(runtime.context)
        with self._lock:
            if not fresh and key in self._runs:
                self._runs.move_to_end(key)
                return self._runs[key]
        context = self._resolve(runtime.context)
        with self._lock:
            self._runs[key] = context
            while len(self._runs) > _KEPT:
                self._runs.popitem(last=False)
        return context

    def bind(self, name: str, node: Callable[..., Any]) -> Callable[..., Any]:
        """`node` (registered as `name`) with the run's context in place of the JSON options."""
        fresh = name == self._entry

        def bound(state: Any, runtime: Runtime[Any]) -> Any:
            return node(state, runtime.override(context=self._context(runtime, fresh)))

        bound.__name__ = getattr(node, "__name__", name)
        bound.__doc__ = node.__doc__
        return bound
