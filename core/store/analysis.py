"""The text that Milvus's BM25 function indexes, and the same treatment for the query.

Milvus's jieba analyzer segments Chinese well and folds case, but Milvus Lite ignores analyzer
filters (stemmer, stop words), so "formed" never meets "form" and "the" weighs as much as a name
does. Zhixing therefore analyses English words itself before the text reaches Milvus: case
folded, English stop words dropped, Snowball-stemmed. Chinese runs pass through untouched for
jieba. On hotpotqa-100 this lifts BM25 alone from R@5 0.760 to 0.795 (benchmarks/bench_quality.py).

The analysis is versioned per knowledge base (`KnowledgeBase.analysis`): a knowledge base built
before it existed keeps raw text in its index, so its queries must stay raw as well.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

__all__ = ["ANALYSIS_VERSION", "bm25_text"]

ANALYSIS_VERSION = 1

_STEMMER = snowballstemmer.stemmer("english")
# Chinese runs, Latin words and numbers, then any other script's words.
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+|[0-9A-Za-z\u00c0-\u024f]+|[^\W_]+")
_LATIN = re.compile(r"[a-z]")
_STOP = frozenset(
    str.split(
        "a an and are as at be been being but by can could did do does for from had has have he her"
        " his how i if in into is it its me my no nor not of on or our she so such than that the"
        " their them then there these they this those to was we were what when where which who whom"
        " why will with would you your"
    )
)


def bm25_text(text: str, version: int = ANALYSIS_VERSION) -> str:
    """Return `text` as BM25 should see it under the given analysis version (0: raw)."""
    if version < 1:
        return text
    words = []
    for token in _TOKEN.findall(text):
        if not _LATIN.search(token := token.casefold()):
            words.append(token)  # Chinese for jieba, or a number
        elif token not in _STOP:
            words.append(_stem(token))
    return " ".join(words)


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    # Snowball is pure Python (~30 µs a word); a corpus repeats its vocabulary, so cache it.
    return _STEMMER.stemWord(word)
