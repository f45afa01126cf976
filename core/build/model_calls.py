"""The enrich stage's model calls (core/build/enrich.py, core/build/graph_writer.py): a batch
through `call_many` that a cancel abandons at once, and the short, countable reason a call fell
back (a build's report counts them per reason).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import LLMError, LLMOutputError
from ..llm.boundary import Rejections
from ..llm.prompts import Prompt, T
from ..llm.protocol import LLM, CallsCancelled
from .pause import BuildCancelled

__all__ = ["call_many", "fallback_reason"]


def call_many(
    llm: LLM,
    role: Prompt[T],
    variables: Sequence[dict[str, Any]],
    rejections: Rejections,
    cancel: threading.Event | None,
) -> list[T | LLMError]:
    """`llm.call_many` that a cancel abandons at once (BuildCancelled), in flight or not."""
    if cancel is not None and cancel.is_set():
        raise BuildCancelled
    try:
        return list(llm.call_many(role, variables, rejections, cancel=cancel))
    except CallsCancelled:
        raise BuildCancelled from None


_HTTP = re.compile(r"HTTP \d{3}")


def fallback_reason(error: BaseException) -> str:
    """A short, countable reason a chunk's (or a merge's) LLM step fell back."""
    if isinstance(error, LLMOutputError):
        return "no usable output after one repair"
    if isinstance(error, LLMError):
        status = _HTTP.search(str(error))
        return f"request failed ({status.group(0)})" if status else "request failed"
    return f"extraction failed ({type(error).__name__})"
