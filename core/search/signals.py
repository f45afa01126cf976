"""What one query's own results say about each list, measured at search time (core/search/fusion.py).

`keyword_match` says how much of the question BM25's top hits matched. BM25 ranks any passage
that shares one word with the query, so a list always comes back; the match says whether it
matched the question or only a stray word of it. It is the product of two shares, neither
needing statistics of the corpus nor anything fitted to a data set:

- coverage (`keyword_coverage`): the share of the question's terms that the top hits contain;
  a question paraphrased away from the passage's wording covers part, an extractive question
  that copies the passage's words nearly all;
- script agreement (`script_agreement`): how far the top hits are written in the question's
  script. An English question over Chinese passages still "covers" the acronyms both share
  (TLS, JWT, SQL), and over a mixed corpus it may find English passages; the agreement keeps
  the first case near 0 and the second near 1.

Terms are what the index sees: English words case-folded, stop words dropped and stemmed
(core/store/analysis.py), and Chinese as character bigrams, as the index holds them (the hits'
indexed texts are read back with `analysis.readable`), leaving out bigrams with a question or
function character (的, 是, 什么, 哪 …), which a passage has no reason to contain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..store.analysis import bm25_text, readable
from ..text.chinese import CJK, CJK_RUN, FUNCTION_CHARACTERS

__all__ = [
    "COVERAGE_DEPTH",
    "KeywordSignal",
    "cjk_share",
    "keyword_coverage",
    "keyword_match",
    "keyword_signal",
    "query_terms",
    "script_agreement",
]

COVERAGE_DEPTH = 5  # how many of BM25's top hits may contain a term
_LATIN = re.compile(r"[0-9a-z\u00c0-\u024f]+")
_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")
_LETTERS_PER_CHARACTER = 4  # an English word of ~5 letters says about what 1-2 characters do


def query_terms(query: str, version: int = 1) -> list[str]:
    """The query's distinct terms: analysed English words and Chinese content bigrams."""
    analysed = readable(bm25_text(query, version)).casefold()
    terms: list[str] = []
    for token in analysed.split():
        if CJK_RUN.fullmatch(token):
            terms += _bigrams(token)
        else:
            terms += [w for w in _LATIN.findall(token) if w]
    return list(dict.fromkeys(terms))


def keyword_coverage(
    query: str, texts: Sequence[str], *, depth: int = COVERAGE_DEPTH, version: int = 1
) -> float:
    """Share of the query's terms found in the first `depth` texts (BM25's hits, as analysed).

    0 when the list is empty or the query has no term; 1 when every term is found.
    """
    terms = query_terms(query, version)
    top = [t.casefold() for t in texts[:depth]]
    if not terms or not top:
        return 0.0
    words = {w for t in top for w in _LATIN.findall(t)}
    joined = "\n".join(top)
    found = sum((t in joined) if CJK_RUN.fullmatch(t) else (t in words) for t in terms)
    return found / len(terms)


def cjk_share(text: str) -> float | None:
    """Share of the text written in Chinese characters, Latin letters counted a quarter each;
    None for a text of neither (numbers, punctuation)."""
    cjk = len(CJK.findall(text))
    latin = len(_LETTER.findall(text)) / _LETTERS_PER_CHARACTER
    return cjk / (cjk + latin) if cjk + latin else None


def script_agreement(query: str, texts: Sequence[str], *, depth: int = COVERAGE_DEPTH) -> float:
    """1 when the top texts are written in the query's script, 0 when in the other one."""
    asked, found = cjk_share(query), cjk_share("\n".join(texts[:depth]))
    if asked is None or found is None:
        return 1.0 if texts else 0.0  # nothing to tell the scripts apart by
    return 1.0 - abs(asked - found)


@dataclass(frozen=True)
class KeywordSignal:
    """What BM25's top hits say about one query: how much of it they contain (`coverage`) and
    how far they are written in its script (`agreement`)."""

    coverage: float
    agreement: float

    @property
    def match(self) -> float:
        """How much of the question BM25 matched, in its own script (0..1)."""
        return self.coverage * self.agreement if self.coverage else 0.0


def keyword_signal(
    query: str, texts: Sequence[str], *, depth: int = COVERAGE_DEPTH, version: int = 1
) -> KeywordSignal:
    """The signal of BM25's top texts (as indexed) for `query`."""
    texts = [readable(t) for t in texts[:depth]]
    return KeywordSignal(
        keyword_coverage(query, texts, depth=depth, version=version),
        script_agreement(query, texts, depth=depth),
    )


def keyword_match(
    query: str, texts: Sequence[str], *, depth: int = COVERAGE_DEPTH, version: int = 1
) -> float:
    """How much of the question BM25's top texts (as indexed) matched, in its own script (0..1)."""
    return keyword_signal(query, texts, depth=depth, version=version).match


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in FUNCTION_CHARACTERS else [run]
    return [
        run[i : i + 2]
        for i in range(len(run) - 1)
        if run[i] not in FUNCTION_CHARACTERS and run[i + 1] not in FUNCTION_CHARACTERS
    ]
