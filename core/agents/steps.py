"""One model call inside a node of either agent: None offline, and None (logged) when the call
fails, so the node's own heuristic takes over — the model adds, never subtracts."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ..errors import LLMError
from ..llm.prompts import Prompt, T
from ..llm.protocol import LLM

__all__ = ["call_or_none"]

log = logging.getLogger(__name__)


def call_or_none(
    llm: LLM | None, role: Prompt[T], variables: Mapping[str, object], *, step: str
) -> T | None:
    """`llm.call(role, variables)`, or None without a model or when the call failed."""
    if llm is None:
        return None
    try:
        return llm.call(role, variables)
    except LLMError as exc:
        log.warning("The %s step falls back to the offline heuristic: %s", step, exc)
        return None
