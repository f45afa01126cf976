"""Which language a text is in: the one place Zhixing tells Chinese from English.

Two questions, two rules. A *question* is Chinese when it has Han characters, unless it also
has English function words and more Latin letters than Han characters (`is_chinese`: answers,
plans and reports follow it). A passage of *prose* is Chinese when it has at least as many
Han characters as Latin words, or any at all in a Chinese document (`is_chinese_prose`: the
offline extraction follows it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .chinese import CJK
from .question_words import ENGLISH_FUNCTION_WORDS

__all__ = ["is_chinese", "is_chinese_prose"]

# What a question's Latin letters count in, and what counts as an English word of prose.
_LATIN_RUN = re.compile(r"[A-Za-z0-9]+")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")


def is_chinese(text: str) -> bool:
    """Tell whether a question is asked in Chinese rather than English.

    Chinese questions often carry English terms ("Java 应用…"), English ones rarely carry Chinese
    but may quote a term ("What is SQL注入?"). So any Han character makes a question Chinese,
    unless it also has English function words and its Latin letters outnumber its Han characters.
    """
    han = len(CJK.findall(text))
    if not han:
        return False
    words = _LATIN_RUN.findall(text)
    if not any(w.lower() in ENGLISH_FUNCTION_WORDS for w in words):
        return True
    return han >= sum(len(w) for w in words)


def is_chinese_prose(
    prose: Iterable[str], context: str = "", *, any_of: Iterable[str] = ()
) -> bool:
    """Whether the prose is mostly Chinese: as many CJK characters as Latin words, or more.

    Text of a Chinese document (`context`: its title and headings) that has any Chinese in it
    (in `prose` or in `any_of`, text not counted, such as code) counts as Chinese, even when
    English link titles outnumber its Chinese words.
    """
    prose = list(prose)
    if CJK.search(context) and any(CJK.search(t) for t in [*prose, *any_of]):
        return True
    han = sum(len(CJK.findall(t)) for t in prose)
    words = sum(len(_PROSE_WORD.findall(t)) for t in prose)
    return han > 0 and han >= words
