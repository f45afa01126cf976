"""How close each sentence the extractive answer may quote is to the question (issue 37).

Key terms alone cannot see that "会话令牌必须…" answers "What does ASVS require for session
tokens?", nor that of two sentences both holding "password" and "stored", the one on plain
text and hashing answers "How should passwords be stored?" and the one on peppers does not.
The built-in multilingual model (USE v3, core/embed.py) scores each candidate sentence against
the question and each of its aspects: the cosine of their vectors.

Always the built-in model, whatever the knowledge base was embedded with: the sentences of ten
hits are some 100 short texts an answer, which it embeds in about half a second on two cores;
multilingual-e5-small, 20x slower (benchmarks/bench_embedding.py), would make every offline
answer wait seconds, and an endpoint's embedder a round trip. The scale of its cosines is what
the thresholds in core/answer_sentences.py were measured on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .embed import Embedder, embed_queries, shared_builtin

__all__ = ["MAX_SCORED", "Relevance", "builtin_relevance", "relevance"]

log = logging.getLogger(__name__)

# The sentences scored an answer, best-ranked hits first (ten hits of long chunks give 100-150;
# past this the later hits' sentences keep a score of 0 and the key terms alone choose among
# them), each read to SCORED_CHARS: the model averages its tokens, so a table row's tail moves
# its vector little and costs as much as its head. About 0.5 s an answer on two cores.
MAX_SCORED = 64
SCORED_CHARS = 200


class Relevance(Protocol):
    """Scores sentences against queries: an (n_queries, n_sentences) array of cosines."""

    def __call__(self, queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray: ...


def builtin_relevance() -> Relevance:
    """The built-in model's cosines (its vectors are L2-normalised)."""
    return _EmbeddingRelevance(shared_builtin())


class _EmbeddingRelevance:
    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def __call__(self, queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        q = embed_queries(self._embedder, list(queries))
        s = self._embedder.embed(list(sentences))
        return np.asarray(q @ s.T, dtype=np.float32)


def relevance(
    scorer: Relevance | None, queries: Sequence[str], sentences: Sequence[str]
) -> np.ndarray:
    """Each sentence's cosine to each query, (len(queries), len(sentences)); zeros without a
    scorer or when it fails (the answer then rests on the key terms alone, as it did before)."""
    scores = np.zeros((len(queries), len(sentences)), dtype=np.float32)
    if scorer is None or not queries or not sentences:
        return scores
    head = [s[:SCORED_CHARS] for s in sentences[:MAX_SCORED]]
    try:
        scores[:, : len(head)] = scorer(queries, head)
    except Exception:  # a model that fails to load or run must not cost the answer
        log.warning("Sentence relevance failed; the answer uses key terms only.", exc_info=True)
    return scores
