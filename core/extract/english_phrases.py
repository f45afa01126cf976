"""English noun phrases: a head noun with up to three modifiers ("prepared statements",
"SQL injection"), and runs of capitalized words ("Content Security Policy").

The head-noun rule needs no tagger: the heads are the field's nouns (`lexicon.EN_HEADS`), and a
word may modify one unless it is a function word, a verb or a vague adjective.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from . import lexicon as lx
from .mention import Mention, overlaps

__all__ = ["english_phrases"]

_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?:'s)?", re.ASCII)


def english_phrases(text: str, taken: Sequence[tuple[int, int]]) -> list[Mention]:
    """Head-noun phrases ("prepared statements") and capitalized ones ("Content Security Policy")."""
    words = [m for m in _EN_WORD.finditer(text) if not overlaps(m.start(), m.end(), taken)]
    if not words:
        return []
    out = _head_phrases(text, words)
    capitals = sum(w.group()[0].isupper() for w in words)
    if len(words) < 3 or capitals / len(words) < 0.6:  # not a title-cased heading or label
        out.extend(_capitalized_phrases(text, words))
    return out


def _joined(text: str, a: re.Match[str], b: re.Match[str]) -> bool:
    return text[a.end() : b.start()] == " "


def _modifier(word: str) -> bool:
    low = word.lower()
    if low in lx.EN_MODIFIER_STOP or low.endswith("'s") or low.isdigit() or len(low) < 2:
        return False
    if low.endswith(("ly", "izes", "ises")) or (low.endswith("ing") and low not in lx.EN_HEADS):
        return False  # adverbs, verbs ("neutralizes"), gerunds that are not heads
    return low not in {"safe", "unsafe", "example", "sample"}


def _head_phrases(text: str, words: Sequence[re.Match[str]]) -> list[Mention]:
    out: list[Mention] = []
    for i, word in enumerate(words):
        low = word.group().lower()
        if low not in lx.EN_HEADS:
            continue
        nxt = words[i + 1] if i + 1 < len(words) else None
        if nxt is not None and _joined(text, word, nxt) and nxt.group().lower() in lx.EN_HEADS:
            continue  # the phrase goes on: "injection attacks" is found at "attacks"
        first = i
        while first > 0 and i - first < 3 and _joined(text, words[first - 1], words[first]):
            if not _modifier(words[first - 1].group()):
                break
            first -= 1
        if first < i and first > 0 and words[first - 1].group().lower() in lx.EN_VERB_OPENERS:
            first += 1  # "must never concatenate user input": the first word is a verb
        span = list(words[first : i + 1])
        while len(span) > 2 and span[-1].group().lower() in lx.EN_GENERIC_TAILS:
            if span[-2].group().lower() not in lx.EN_HEADS:
                break
            span.pop()  # "SQL injection attacks" is the entity "SQL injection"
        if mention := _english_mention(text, span):
            out.append(mention)
    return out


def _english_mention(text: str, span: Sequence[re.Match[str]]) -> Mention | None:
    head = span[-1].group().lower()
    modifiers = [w.group().lower() for w in span[:-1]]
    kind = "concept"
    if head in lx.EN_VULNERABILITY_HEADS:
        kind = "vulnerability"
    elif head in lx.EN_CONTROL_HEADS or lx.EN_CONTROL_MODIFIERS.intersection(modifiers):
        kind = "control"
    start, end = span[0].start(), span[-1].end()
    if len(span) == 1:  # a bare head names something only for a few words ("encryption")
        return Mention(text[start:end], kind, start, end, 1.0, weak=head not in lx.EN_SINGLE_OK)
    if all(w in lx.EN_GENERIC for w in [*modifiers, head]):
        return Mention(text[start:end], kind, start, end, 0.8)
    weight = 1.5 + 0.25 * (len(span) - 1) + (0.5 if kind != "concept" else 0.0)
    return Mention(text[start:end], kind, start, end, weight)


def _capitalized_phrases(text: str, words: Sequence[re.Match[str]]) -> list[Mention]:
    out: list[Mention] = []
    run: list[re.Match[str]] = []
    for word in [*words, None]:
        w = word.group() if word is not None else ""
        joined = word is not None and run and _joined(text, run[-1], word)
        if word is not None and w[:1].isupper() and (not run or joined):
            run.append(word)
            continue
        if word is not None and w == "of" and run and joined:
            run.append(word)
            continue
        while run and (run[-1].group() == "of" or run[-1].group().lower() in lx.EN_GENERIC_TAILS):
            run.pop()
        while run and run[0].group().lower() in lx.EN_MODIFIER_STOP:
            run.pop(0)
        if 2 <= len(run) <= 5 and not all(r.group().isupper() for r in run):
            start, end = run[0].start(), run[-1].end()
            head = run[-1].group().lower()
            kind = "vulnerability" if head in lx.EN_VULNERABILITY_HEADS else "concept"
            kind = "control" if head in lx.EN_CONTROL_HEADS else kind
            out.append(Mention(text[start:end], kind, start, end, 2.0))
        run = [word] if word is not None and w[:1].isupper() else []
    return out
