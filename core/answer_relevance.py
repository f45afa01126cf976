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
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from .embed import Embedder, embed_queries, shared_builtin

__all__ = [
    "BRIDGE",
    "MARGIN",
    "MAX_BRIDGED",
    "MAX_SCORED",
    "Relevance",
    "bridges",
    "builtin_relevance",
    "relevance",
]

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


# A word of a sentence in the other language than the question's stands for one of its key
# terms when the two are each other's nearest neighbours by the built-in model's cosine, among
# all the words of the hits' sentences on either side, and at least BRIDGE apart: "会话" and
# "session" (0.63), "令牌" and "tokens" (0.61). Nearest neighbours both ways, as bitext mining
# pairs sentences: a word alone is close to many ("日志" is 0.71 from "log" and 0.63 from
# "login", "输入验证" 0.69 from "authentication", "允许" 0.64 from "forbidden"), and only the
# other side's own words tell a translation from a neighbour. A term may stand for several words
# within MARGIN of its nearest ("use": 使用 0.94, 用于 0.85 is not). BRIDGE was chosen by
# leave-one-set-out over four cross-lingual dev sets and two sets of cross-lingual questions
# with no answer in the knowledge base: five of six folds chose 0.6 (README "Offline answers
# across languages" has the left-out figures); MARGIN 0.03, 0.05 and 0.1 were within 0.005.
# At most MAX_BRIDGED words a side are read, best-ranked hits first.
BRIDGE = 0.6
MARGIN = 0.05
MAX_BRIDGED = 300


def bridges(
    scorer: Relevance | None,
    terms: Mapping[str, str],
    words: Sequence[str],
    own: Sequence[str] = (),
) -> dict[str, str]:
    """Which of `words` (the other language's) stand for which key term: {word: term}.

    `terms` maps each key term to the word the question writes it as (core/text/question_words
    .py `term_words`); `own` are the words of the question's language in the hits, which a word
    of `words` may be closer to than to any term. None without a scorer, or when it fails (the
    key terms then match as written, as before).
    """
    names = list(terms)
    read = list(dict.fromkeys(words))[:MAX_BRIDGED]
    surfaces = [terms[t] for t in names]
    side = surfaces + [w for w in dict.fromkeys(own) if w not in surfaces][:MAX_BRIDGED]
    if scorer is None or not names or not read:
        return {}
    try:
        scores = np.asarray(scorer(side, read))
    except Exception:  # a model that fails must not cost the answer
        log.warning("Term bridges failed; the answer matches key terms as written.", exc_info=True)
        return {}
    nearest = scores.argmax(axis=0)  # each word's nearest on the question's side
    found: dict[str, str] = {}
    for i, term in enumerate(names):
        best = float(scores[i].max())
        for j, word in enumerate(read):
            score = float(scores[i, j])
            if nearest[j] == i and score >= BRIDGE and score >= best - MARGIN:
                found[word] = term
    return found
