"""What the rest of core asks of a model (docs/architecture.md §1): the `LLM` protocol.

`LLMClient` (an OpenAI-compatible endpoint through langchain-openai) implements it, and so does
the scripted in-process model of the tests (tests/fakes.py). Code outside `core.llm` types its
model as `LLM` and never imports the client, so reading a type costs no langchain import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from ..errors import LLMError
    from .boundary import Rejections
    from .prompts import Prompt

__all__ = ["LLM", "CallsCancelled", "StreamingLLM", "ToolCallingLLM"]


T = TypeVar("T", bound=BaseModel)


class CallsCancelled(Exception):  # noqa: N818 - a signal to the caller, not an error
    """`call_many` was cancelled: its caller stops waiting for the requests in flight."""


@runtime_checkable
class LLM(Protocol):
    """A model that answers a prompt with its validated structured output."""

    def call(
        self,
        role: Prompt[T],
        variables: Mapping[str, object],
        rejections: Rejections | None = None,
    ) -> T:
        """One prompt's validated output; raises LLMError (or LLMOutputError) when it fails."""
        ...

    def call_many(
        self,
        role: Prompt[T],
        variables_list: Sequence[Mapping[str, object]],
        rejections: Rejections | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> list[T | LLMError]:
        """Many inputs of one prompt, in parallel; each failure comes back in its place.

        Once `cancel` is set it raises CallsCancelled without waiting for the requests in
        flight, and sends no more.
        """
        ...

    def estimate(
        self, role: Prompt[Any], variables_list: Sequence[Mapping[str, object]]
    ) -> dict[str, Any]:
        """The calls and tokens a batch would cost (cached inputs cost nothing)."""
        ...


@runtime_checkable
class ToolCallingLLM(LLM, Protocol):
    """A model the task agent can hand tools to (chat messages in, an AI message out)."""

    def invoke_tools(self, messages: Sequence[Any], tools: Sequence[Mapping[str, Any]]) -> Any:
        """One chat turn with `tools` bound; returns the model's message."""
        ...


@runtime_checkable
class StreamingLLM(LLM, Protocol):
    """A model whose reply can be read as it is written (the answer, shown as it grows)."""

    def call_streaming(
        self,
        role: Prompt[T],
        variables: Mapping[str, object],
        on_partial: Callable[[dict[str, Any]], None],
        rejections: Rejections | None = None,
    ) -> T:
        """`call`, handing the output's fields parsed so far to `on_partial` as they grow."""
        ...
