"""The test doubles, in one place.

- `ScriptedLLM`: a model in this process that implements core/llm/protocol.py's `LLM` (and
  `ToolCallingLLM`'s `invoke_tools` is left out on purpose: tools need the real client). Each
  prompt answers from a script, validated against the prompt's own schema, so a scripted reply
  is as typed as a real one; a scripted exception is raised. For tests of the agents' logic,
  where the HTTP round trip adds only time.
- `FakeOpenAI` (tests/fake_openai.py): a real HTTP server speaking the OpenAI API, for the tests
  of the real client (`ChatOpenAI` runs for real against it): retries, malformed replies, 429s.
- `HashEmbedder`: a tiny deterministic embedder (character bigrams hashed into 64 dimensions),
  for tests where the built-in model's meaning is not what is tested.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel

from tests.fake_openai import FakeOpenAI
from zhixing.core.errors import LLMError
from zhixing.core.llm.boundary import Rejections
from zhixing.core.llm.prompts import Prompt
from zhixing.core.llm.protocol import CallsCancelled

__all__ = ["FakeOpenAI", "HashEmbedder", "ScriptedLLM"]

# A scripted reply: the schema's fields, a callable of the prompt's variables, or an exception.
Reply = Mapping[str, Any] | Callable[[Mapping[str, object]], Mapping[str, Any]] | Exception


@dataclass
class ScriptedLLM:
    """Answers each prompt (by name) from `script`: one reply for every call, or a list used in
    order (the last repeats). `calls` records (prompt name, variables) in order."""

    script: Mapping[str, Reply | Sequence[Reply]]
    calls: list[tuple[str, dict[str, object]]] = field(default_factory=list)

    def call(
        self,
        role: Prompt,
        variables: Mapping[str, object],
        rejections: Rejections | None = None,
    ) -> BaseModel:
        role.render(variables)  # a missing variable fails here as it would for the real client
        replies = self.script.get(role.name)
        if replies is None:
            raise AssertionError(f"the script has no reply for the prompt {role.name!r}")
        made = sum(1 for name, _ in self.calls if name == role.name)
        self.calls.append((role.name, dict(variables)))
        if isinstance(replies, Sequence) and not isinstance(replies, str | Mapping):
            reply = replies[min(made, len(replies) - 1)]
        else:
            reply = replies
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(variables)
        return role.schema.model_validate(dict(reply))

    def call_many(
        self,
        role: Prompt,
        variables_list: Sequence[Mapping[str, object]],
        rejections: Rejections | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> list[BaseModel | LLMError]:
        out: list[BaseModel | LLMError] = []
        for variables in variables_list:
            if cancel is not None and cancel.is_set():
                raise CallsCancelled
            try:
                out.append(self.call(role, variables, rejections))
            except LLMError as exc:
                out.append(exc)
        return out

    def estimate(
        self, role: Prompt, variables_list: Sequence[Mapping[str, object]]
    ) -> dict[str, Any]:
        prompt = sum(len(role.render(v)) for v in variables_list) // 4
        return {
            "calls": len(variables_list),
            "cached": 0,
            "prompt_tokens": prompt,
            "completion_tokens": sum(role.completion_tokens(v) for v in variables_list),
            "model": "scripted",
        }

    def asked(self, name: str) -> list[dict[str, object]]:
        """The variables of every call of one prompt, in order."""
        return [variables for called, variables in self.calls if called == name]


class HashEmbedder:
    """A tiny deterministic embedder: character bigrams hashed into 64 dimensions."""

    name = "test-hash"
    dimension = 64

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, 0] = 1e-3  # never the zero vector, which has no cosine
            for pair in zip(text, text[1:], strict=False):
                out[i, zlib.crc32("".join(pair).encode()) % self.dimension] += 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)
