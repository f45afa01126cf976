"""The words of a question: the terms it is about, for the extractive answer; those that ask
for a kind of answer; and the generic ones every document of the field uses.

- `question_terms` are jieba words (Chinese) and Snowball stems (English) without question and
  function words; `held_terms` tells which of them a sentence holds. (The search and the
  agentic plan analyse queries with core/search/query_terms.py instead.)

- "会话超时应该设置多久？" is answered by "空闲会话在 15 分钟后失效", which shares one word with it:
  "多久" asks for a duration, and a sentence that holds one answers that part of the question.
  The extractive answer (core/answer.py) and the offline judge (core/ask/judge.py) count such
  a kind as one more term, held by the sentences that contain an answer of that kind.
- "密钥管理" shares "管理" with a section on 会话管理, "error handling" shares "handling" with
  anything handled: generic words count only when a question has nothing more specific.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, cast

from .chinese import CJK, QUESTION_WORDS
from .english import STOP_WORDS, stem, words

__all__ = [
    "ENGLISH_FUNCTION_WORDS",
    "AnswerKind",
    "asked_kinds",
    "content_words",
    "held_terms",
    "holds",
    "is_cue",
    "is_generic",
    "is_kind_term",
    "question_terms",
    "term_words",
]

AnswerKind = Literal["duration", "date", "number"]

_UNITS_ZH = "秒|秒钟|分钟|小时|个小时|天|日|周|星期|个月|月|年"
_UNITS_EN = r"seconds?|minutes?|hours?|days?|weeks?|months?|years?"
# The question words of each kind, checked in this order: "多少天" asks for a duration, not a
# number.
_ASKS: dict[AnswerKind, re.Pattern[str]] = {
    "duration": re.compile(
        rf"多久|多长时间|多长|多少(?:{_UNITS_ZH})|\bhow long\b|\bhow many (?:{_UNITS_EN})\b", re.I
    ),
    "date": re.compile(
        r"哪一?年|何年|何时|什么时候|哪一?天|\bwhen\b|\b(?:what|which) year\b", re.I
    ),
    "number": re.compile(r"多少|几[个次位种项名倍岁]|多大|\bhow (?:many|much)\b", re.I),
}
_HOLDS: dict[AnswerKind, re.Pattern[str]] = {
    "duration": re.compile(
        rf"\d+(?:\.\d+)?\s*(?:{_UNITS_ZH})|[一二三四五六七八九十百两半]+(?:{_UNITS_ZH})"
        rf"|\b\d+(?:\.\d+)?\s*(?:{_UNITS_EN})\b",
        re.I,
    ),
    "date": re.compile(r"\d{3,4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*日|\b(?:1[5-9]\d\d|20\d\d)\b"),
    "number": re.compile(r"\d|[一二三四五六七八九十百千万两]+(?:个|次|位|种|项|名|倍|岁|家|人)"),
}
# Words every document of a security knowledge base uses: its subject (安全, attack), what it
# asks of you (防止, prevent), and head nouns that name a kind of rule rather than its topic.
_GENERIC_ZH = words(
    "安全 应用 应用程序 系统 管理 规则 措施 方法 机制 策略 处理 方面 内容 "
    "防止 防护 预防 避免 防范 攻击 漏洞 风险 威胁"
)
_GENERIC_EN = frozenset(
    stem(w)
    for w in words(
        "security secure application system management rule measure method mechanism policy "
        "handling practice prevent protect avoid mitigate defend attack vulnerability risk threat"
    )
)


def asked_kinds(question: str) -> tuple[AnswerKind, ...]:
    """The kinds of answer a question asks for, at most one: the first whose words it uses."""
    for kind, pattern in _ASKS.items():
        if pattern.search(question):
            return (kind,)
    return ()


def holds(kind: AnswerKind, text: str) -> bool:
    """Tell whether a sentence holds an answer of that kind (a number with its unit, a year)."""
    return bool(_HOLDS[kind].search(text))


def is_cue(term: str) -> bool:
    """Tell whether a query term is the question word that asks for a kind ("多久", "long")."""
    return term.casefold() == "long" or any(p.fullmatch(term) for p in _ASKS.values())


def is_generic(term: str) -> bool:
    """Tell whether a term (a word or an English stem) is one every document uses."""
    folded = term.casefold()
    return folded in _GENERIC_ZH or folded in _GENERIC_EN or stem(folded) in _GENERIC_EN


# --- the terms of a question ------------------------------------------------------------------

_LATIN_WORD = re.compile(r"[A-Za-z0-9]+")
_KIND = "<{}>"  # a term that stands for a kind of answer ("<duration>"), never a word
# Question words and function words: they say how something is asked, not what about.
_ZH_STOP = QUESTION_WORDS | words(
    "哪种 为何 多少 几 吧 啊 为 被 把 将 要 需 应 必须 能够 会 规定 其 它 他们 我们 你 我 这 那 "
    "这些 那些 等 有关 相关 进行 主要 分别 各 各自 具体 提出 做 做到 满足 包括 包含"
)
ENGLISH_FUNCTION_WORDS = STOP_WORDS | words(
    "whose "
    "about "
    "should must may might shall "
    "us any all some also here say says until "
    "said describe explain tell list give mean means way ways kind kinds type types required "
    "requirement requirements require requires need needs according recommend recommended "
    "please other more most much many each define defined definition meaning"
)
_POS_DROPPED = ("u", "p", "c", "r", "d", "y", "e", "o", "q", "x", "w", "f", "m")


def question_terms(text: str) -> tuple[str, ...]:
    """Return the terms a question is about, generic words only when nothing else is left.

    A question word that asks for a kind of answer ("多久", "how long") becomes that kind
    ("<duration>"): a sentence holding a duration answers it without sharing a word with it.
    """
    kinds = asked_kinds(text)
    terms = [t for t in _candidate_terms(text) if not (kinds and is_cue(t))]
    specific = [t for t in terms if not is_generic(t)]
    return (*(specific or terms), *(_KIND.format(k) for k in kinds))


def is_kind_term(term: str) -> bool:
    """Tell whether a term of `question_terms` stands for a kind of answer, not a word."""
    return term.startswith("<")


def held_terms(terms: Sequence[str], text: str) -> frozenset[str]:
    """The terms of `question_terms` a sentence holds (Chinese as text, English as stems)."""
    lowered, stems = text.lower(), _latin_stems(text)
    return frozenset(t for t in terms if _holds_term(t, text, lowered, stems))


def term_words(question: str) -> dict[str, str]:
    """Each word term of `question_terms` with the word the question writes it as ("token" for
    the stem of "tokens"; a Chinese term is its own word): what a model can read."""
    written = [w.lower() for w in _LATIN_WORD.findall(question)]
    out: dict[str, str] = {}
    for term in question_terms(question):
        if is_kind_term(term):
            continue
        if CJK.search(term):
            out[term] = term
        else:
            out[term] = next((w for w in written if stem(w) == term), term)
    return out


def content_words(text: str) -> list[str]:
    """A sentence's content words as written, each once: jieba words of two characters or
    more (Chinese) and lowercased English words, without question and function words."""
    if not CJK.search(text):
        found = (w.lower() for w in _LATIN_WORD.findall(text))
        return list(dict.fromkeys(w for w in found if _is_english_term(w) and w.isalpha()))
    from .chinese import pos_tag  # loads jieba's dictionary on first use

    kept: list[str] = []
    for word, flag in pos_tag(text):
        word = word.strip().lower()
        if (
            CJK.search(word)
            and len(word) > 1
            and word not in _ZH_STOP
            and not flag.startswith(_POS_DROPPED)
        ):
            kept.append(word)
    return list(dict.fromkeys(kept))


def _holds_term(term: str, text: str, lowered: str, stems: set[str]) -> bool:
    if is_kind_term(term):
        return holds(cast(AnswerKind, term[1:-1]), text)
    return term in lowered if CJK.search(term) else term in stems


def _latin_stems(text: str) -> set[str]:
    return {stem(w) for w in (m.lower() for m in _LATIN_WORD.findall(text)) if len(w) > 1}


def _candidate_terms(text: str) -> list[str]:
    """The content words of a text, in order: jieba words for Chinese, stems for English."""
    terms: list[str] = []
    if CJK.search(text):
        from .chinese import pos_tag  # loads jieba's dictionary on first use

        for word, flag in pos_tag(text):
            word = word.strip().lower()
            if not word or (flag.startswith(_POS_DROPPED) and flag != "eng"):
                continue
            if CJK.search(word):
                if len(word) > 1 and word not in _ZH_STOP:
                    terms.append(word)
            else:
                terms.extend(stem(w) for w in _LATIN_WORD.findall(word) if _is_english_term(w))
    else:
        terms = [stem(w) for w in _LATIN_WORD.findall(text.lower()) if _is_english_term(w)]
    return list(dict.fromkeys(terms))


def _is_english_term(word: str) -> bool:
    word = word.lower()
    return len(word) > 1 and not word.isdigit() and word not in ENGLISH_FUNCTION_WORDS
