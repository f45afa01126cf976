"""English function words and stemming: the one stop list and the one stemmer.

`STOP_WORDS` are the words BM25 leaves out of the index and every query (core/store/analysis.py);
modules that need more (question words for key terms, verbs that cannot modify a noun) add
their own words to this set rather than keeping a list of their own. `stem` is the Snowball
English stemmer, cached.
"""

from __future__ import annotations

from functools import lru_cache

import snowballstemmer

__all__ = ["STOP_WORDS", "stem", "words"]


def words(text: str) -> frozenset[str]:
    """A word list written as one space-separated string."""
    return frozenset(text.split())


STOP_WORDS = words(
    "a an and are as at be been being but by can could did do does for from had has have he her"
    " his how i if in into is it its me my no nor not of on or our she so such than that the"
    " their them then there these they this those to was we were what when where which who whom"
    " why will with would you your"
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball stem of a lower-case English word ("formed", "forming" -> "form")."""
    # Snowball is pure Python (~30 µs a word); a corpus repeats its vocabulary, so cache it.
    return str(_STEMMER.stemWord(word))
