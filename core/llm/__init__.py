"""The LLM seam (docs/architecture.md §1, §4): prompt roles, the structured-output client, cache, embeddings.

Everything that talks to an OpenAI-compatible endpoint lives here; the rest of core sees only
this small surface. langchain-openai and the OpenAI SDK are imported nowhere else, and only
when the client or the embedder is first used: importing them takes about two seconds, which
the offline mode (and every CLI start) should not pay just to read the schemas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .cache import LLMCache, cache_key
from .prompts import (
    PROMPTS,
    EntityDescription,
    GroundedAnswer,
    Prompt,
    SameEntity,
    chunk_knowledge_variables,
    estimate_tokens,
    number_lines,
)
from .protocol import LLM, ToolCallingLLM
from .schemas import (
    ChunkKnowledge,
    ExtractedEntity,
    ExtractedRelation,
    IndexQuestion,
)

if TYPE_CHECKING:
    from .client import LLMClient, make_client
    from .embeddings import OpenAIEmbedder
    from .retry import EndpointUnreachableError, LLMStats

__all__ = [
    "LLM",
    "PROMPTS",
    "ChunkKnowledge",
    "EndpointUnreachableError",
    "EntityDescription",
    "ExtractedEntity",
    "ExtractedRelation",
    "GroundedAnswer",
    "IndexQuestion",
    "LLMCache",
    "LLMClient",
    "LLMStats",
    "OpenAIEmbedder",
    "Prompt",
    "SameEntity",
    "ToolCallingLLM",
    "cache_key",
    "chunk_knowledge_variables",
    "estimate_tokens",
    "make_client",
    "number_lines",
]

_LAZY = {
    "LLMClient": "zhixing.core.llm.client",
    "make_client": "zhixing.core.llm.client",
    "OpenAIEmbedder": "zhixing.core.llm.embeddings",
    "EndpointUnreachableError": "zhixing.core.llm.retry",
    "LLMStats": "zhixing.core.llm.retry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'zhixing.core.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
