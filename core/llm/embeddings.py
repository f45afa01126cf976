"""Embeddings from an OpenAI-compatible endpoint (`ZHIXING_EMBEDDING=openai:<model>`).

`OpenAIEmbedder` satisfies `core.embed.Embedder`. It sends raw text (no tiktoken
pre-tokenization, which non-OpenAI servers such as vLLM, Xinference or Ollama do not accept),
in batches, with the same retries and error wording as the chat client.
"""

from __future__ import annotations

import threading

import numpy as np
import openai
from langchain_openai import OpenAIEmbeddings
from pydantic import SecretStr

from ..config import Settings
from ..errors import ConfigError, LLMError
from .retry import (
    DEFAULT_BASE_URL,
    LLMStats,
    RetryPolicy,
    endpoint_error,
    is_transient,
    public_url,
    run_with_retries,
)

__all__ = ["OpenAIEmbedder"]

_PLACEHOLDER_KEY = "not-needed"


class OpenAIEmbedder:
    """L2-normalized float32 embeddings from an OpenAI-compatible `/embeddings` endpoint."""

    def __init__(
        self,
        settings: Settings,
        model: str | None = None,
        *,
        dimension: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 60,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
    ) -> None:
        if model is None:
            model = settings.embedding.removeprefix("openai:") if settings.embedding else ""
            if settings.embedding == "builtin":
                model = ""
        if not model:
            raise ConfigError(
                "An OpenAI-compatible embedder needs a model; set ZHIXING_EMBEDDING=openai:<model>."
            )
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1.")
        self.model = model
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self.base_url = (settings.openai_base_url or DEFAULT_BASE_URL).rstrip("/")
        self.shown_url = public_url(self.base_url)  # for messages and logs
        self.stats = LLMStats()
        self._secret = settings.openai_api_key
        self._policy = RetryPolicy(max_attempts=max_attempts, backoff_s=backoff_s)
        self._dimension = dimension
        self._probe_lock = threading.Lock()
        self._client = OpenAIEmbeddings(
            model=model,
            api_key=SecretStr(settings.openai_api_key or _PLACEHOLDER_KEY),
            base_url=self.base_url,
            check_embedding_ctx_length=False,  # raw text: what non-OpenAI servers accept
            chunk_size=batch_size,
            max_retries=0,  # ours count and word every retry (core.llm.retry)
            timeout=timeout_s,
            # Floats, not the SDK's default base64: some compatible servers only speak floats.
            model_kwargs={"encoding_format": "float"},
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.shown_url!r})"

    @property
    def dimension(self) -> int:
        """The vector size, asked of the server once (with a one-text request) when unknown."""
        if self._dimension is None:
            with self._probe_lock:
                if self._dimension is None:
                    self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an (n, dimension) float32 array of L2-normalized vectors."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Most servers reject an empty string as input; a placeholder keeps rows aligned.
        cleaned = [t if t.strip() else "-" for t in texts]
        parts = [
            self._request(cleaned[i : i + self.batch_size])
            for i in range(0, len(cleaned), self.batch_size)
        ]
        vectors = np.concatenate(parts, axis=0)
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self._dimension:
            raise LLMError(
                f"The embedding endpoint at {self.shown_url} returned {vectors.shape[1]}-dimensional"
                f" vectors for {self.model!r}, but this knowledge base uses {self._dimension}."
            )
        return vectors

    def _request(self, batch: list[str]) -> np.ndarray:
        def send() -> list[list[float]]:
            return self._client.embed_documents(batch)

        try:
            rows = run_with_retries(
                send, self._policy, self.stats, what=f"Embedding request to {self.shown_url}"
            )
        except openai.OpenAIError as exc:
            self.stats.add("failures")
            raise endpoint_error(
                exc,
                base_url=self.base_url,
                attempts=self._policy.max_attempts if is_transient(exc) else 1,
                model=self.model,
                secret=self._secret,
            ) from None  # the SDK's error may quote the server, and a server may echo the key
        if len(rows) != len(batch):
            raise LLMError(
                f"The embedding endpoint at {self.shown_url} returned {len(rows)} vectors for"
                f" {len(batch)} texts."
            )
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(batch), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # A zero vector stays zero rather than turning into NaNs.
        return vectors / np.where(norms > 0, norms, 1.0)
