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

A host shows its client the message of a built-in exception but words any other as "An internal
error occurred" (issue 38: a missing question reached Studio as `KeyError: 'question'`, an
unknown knowledge base's `NotFoundError` as that phrase). So a bound node re-raises Zhixing's
own errors as a `ValueError` with the same sentence, and the entry node first checks that the
input holds what the graph needs (`required`), in a sentence of its own.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from typing import Any

from langgraph.runtime import Runtime

from ..errors import ZhixingError

__all__ = ["Resolver", "RunContexts", "missing_input"]

Resolver = Callable[[Any], Any]  # the run's context (JSON options or None) -> the nodes' context

_KEPT = 64  # runs remembered at once: more than a host runs in parallel


def missing_input(state: Mapping[str, Any], required: Collection[str]) -> str | None:
    """The sentence for the first required input that is absent, blank or not text; None when
    all are there. Each required input is text (a question, a task): the host checks the input
    against no schema, so `{"question": 42}` arrives as it was sent."""
    for key in sorted(required):
        value = state.get(key)
        example = f'{{"{key}": "..."}}'
        if value is None or (isinstance(value, str) and not value.strip()):
            return f'The run\'s input needs a "{key}": type one in the input form, e.g. {example}.'
        if not isinstance(value, str):
            shown = json.dumps(value, ensure_ascii=False, default=str)
            shown = shown if len(shown) <= 40 else shown[:40] + "…"
            return f'The run\'s "{key}" must be text, e.g. {example}, not {shown}.'
    return None


class RunContexts:
    """The nodes' context of each run of one bound graph."""

    def __init__(self, resolve: Resolver, entry: str, required: Collection[str] = ()) -> None:
        self._resolve, self._entry, self._required = resolve, entry, tuple(required)
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
            missing = missing_input(state, self._required) if fresh else None
            if missing:
                raise ValueError(missing)
            try:
                return node(state, runtime.override(context=self._context(runtime, fresh)))
            except ZhixingError as err:  # a built-in, so the host shows the sentence (above)
                raise ValueError(str(err)) from err

        bound.__name__ = getattr(node, "__name__", name)
        bound.__doc__ = node.__doc__
        return bound
