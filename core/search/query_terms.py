"""Query analysis without an LLM: key terms, rule-based sub-questions and aspects.

Shared by the offline search strategies (keyword, split, generalize, graph) and the agentic loop.
Chinese goes through the one jieba tokenizer (core/text/chinese.py; its security lexicon keeps
会话管理 whole); English through a word pattern. Pure functions.
"""

from __future__ import annotations

import re

from ..text.chinese import CJK, QUESTION_WORDS, pos_tag
from ..text.english import STOP_WORDS, words

__all__ = ["key_terms", "split_query"]

_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#._/-]*[A-Za-z0-9+#]|[A-Za-z]|\d+(?:\.\d+)*")
_EN_STOP = STOP_WORDS | words(
    "about whose should shall must may might any all some also only other more most much many"
    " each per between vs versus use used using"
)
_ZH_STOP = QUESTION_WORDS | words("有没有 请问 问题 么 哪")
_ZH_KEEP_FLAGS = ("n", "v", "a", "eng", "x", "l", "j", "i", "m")
_SPLIT = re.compile(
    r"\s*(?:[,，、;；]|以及|及其|和|与|及|并且|并|还有|\band\b|\bor\b|\bas well as\b)\s*",
    re.IGNORECASE,
)


def key_terms(text: str) -> list[str]:
    """The content words of a query, in order, without question words or stopwords."""
    terms: list[str] = []
    if CJK.search(text):
        for word, flag in pos_tag(text):
            word = word.strip()
            if (len(word) < 2 and not word.isalnum()) or not word or word in _ZH_STOP:
                continue
            if word.lower() in _EN_STOP or not flag.startswith(_ZH_KEEP_FLAGS):
                continue
            if CJK.search(word) and len(word) < 2:
                continue
            terms.append(word)
    else:
        terms = [w for w in _LATIN.findall(text) if w.lower() not in _EN_STOP and len(w) > 1]
    return list(dict.fromkeys(terms))


def split_query(text: str, *, max_parts: int = 5) -> list[str]:
    """Split a question on conjunctions and enumerations into 2–5 sub-questions, or none.

    "Java 应用在日志和会话管理上有哪些安全要求？" -> the shared frame is kept around each part:
    ["Java 应用在日志上有哪些安全要求", "Java 应用在会话管理上有哪些安全要求"].
    """
    body = text.strip().rstrip("?？。.!！")
    pieces = [p for p in _SPLIT.split(body) if p and p.strip()]
    if len(pieces) < 2:
        return []
    # Keep the frame: what precedes the first part and follows the last one applies to all.
    first, last = pieces[0], pieces[-1]
    prefix = _frame_prefix(first)
    suffix = _frame_suffix(last)
    parts = []
    for i, piece in enumerate(pieces):
        core = piece
        if i == 0 and prefix:
            core = core[len(prefix) :]
        if i == len(pieces) - 1 and suffix:
            core = core[: len(core) - len(suffix)]
        core = core.strip()
        if core:
            parts.append(f"{prefix}{core}{suffix}".strip())
    parts = list(dict.fromkeys(parts))
    return parts[:max_parts] if len(parts) >= 2 else []


def _frame_prefix(first: str) -> str:
    """The words before the first enumerated item: for Chinese up to a preposition (在/对/关于)."""
    match = re.match(r"^(.*?(?:在|对于|对|关于|中|的))(?=[^在对关中的]+$)", first)
    # English parts are clauses of their own ("how are sessions invalidated"): no frame.
    return match.group(1) if match and CJK.search(first) else ""


def _frame_suffix(last: str) -> str:
    match = re.search(r"((?:上|中|方面|里)?(?:有|需要|应|应当|必须|要|如何|怎么|是什么).*)$", last)
    if match and CJK.search(last) and match.start() > 0:
        return match.group(1)
    return ""
