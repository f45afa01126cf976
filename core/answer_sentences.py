"""Which of the hits' whole sentences the extractive answer quotes (core/answer.py).

Each sentence (core/text/sentences.py) holds some of the question's key terms, its section
heading's included, and has a relevance: its cosine to the question (core/answer_relevance.py).
A greedy set cover of the key terms picks the fewest sentences that hold them, ties broken by
the merit of each; then the sentences closest to the question by meaning, whatever their words
(a Chinese sentence answering an English question); then a short fill from the sections already
quoted. A sentence that goes on from a quoted one ("Instead, …") is quoted with it; a list of
further reading is never quoted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .models import Hit
from .text.language import is_chinese
from .text.navigation import is_navigation
from .text.question_words import held_terms, is_kind_term
from .text.sentence_cuts import clip
from .text.sentences import hit_sentences

__all__ = ["RELATED", "SENTENCE_CHARS", "Candidate", "candidates", "pick"]

SENTENCE_CHARS = 300  # a longer "sentence" (a table row, a run-on list) is cut for display
_SHORT_CHARS = 16  # sentences shorter than this lose ties: stubs say little
# A sentence is quoted for its meaning, whatever its words, when its cosine to the question
# (core/answer_relevance.py) is at least RELATED and within NEAR of the closest sentence's; one
# such sentence also makes the answer found (core/answer.py). RELATED was chosen by
# leave-one-set-out on seven retrieval sets, answering or declining from one search's hits
# (+1 right evidence, -1 wrong evidence or a null question answered, 0 declined): six folds
# chose 0.425; README "Offline answers across languages" has the left-out figures. NEAR by
# benchmarks/bench_answer.py: 0.1, 0.15 and 0.2 tie on every set, 0.05 quotes less on the
# cheat sheets. Dropping a line far less relevant than the closest (0.3 or 0.4 below) lost
# right lines on four sets of bench_answer and is not done.
RELATED = 0.425
NEAR = 0.1


@dataclass(frozen=True)
class Candidate:
    """A sentence the answer may quote, with the key terms it holds."""

    hit: int  # index into the hits, best first
    order: int  # position over all hits, for stable tie-breaks
    text: str
    terms: frozenset[str]  # the key terms it holds, its section heading's included
    own: int  # how many of them its own words hold (a heading names a topic, says nothing)
    span: tuple[int, int]  # where it lies in its hit's text
    section: str  # the heading it stands under
    follows: bool = False  # it goes on from the sentence before it, in the same paragraph


def candidates(
    hits: Sequence[Hit], terms: Iterable[str], *, scope_ok: bool = False
) -> list[Candidate]:
    """The hits' whole sentences (core/text/sentences.py) and the key terms each one holds.

    Headings, labels and lead-ins are not sentences; scope notes ("本标准适用于…") are left out
    unless the question asks about scope, and so are navigation chunks (a table of contents, an
    index: core/text/navigation.py). A sentence holds the terms of the heading it stands
    under as well: under "4 会话管理", "空闲会话在 15 分钟后失效" is about session management.
    """
    wanted = tuple(terms)
    out: list[Candidate] = []
    seen: set[str] = set()
    for index, hit in enumerate(hits):
        if is_navigation(hit.text):
            continue  # a table of contents or an index names topics, says nothing of them
        for sentence in hit_sentences(hit, scope_ok=scope_ok):
            if _pointer(sentence.text, sentence.heading):
                continue
            key = " ".join(sentence.text.split())
            if key in seen:
                continue  # overlapping chunks repeat sentences: cite the best-ranked one
            seen.add(key)
            last = out[-1] if out and out[-1].hit == index else None
            follows = last is not None and _same_paragraph(hit.text, last.span[1], sentence.start)
            own = held_terms(wanted, sentence.text)
            heading = held_terms(wanted, sentence.heading) - {t for t in wanted if is_kind_term(t)}
            text = clip(sentence.text, SENTENCE_CHARS)
            span = (sentence.start, sentence.end)
            out.append(
                Candidate(
                    index,
                    len(out),
                    text,
                    own | heading,
                    len(own),
                    span,
                    sentence.heading,
                    follows,
                )
            )
    return out


# A list of further reading points elsewhere: "OWASP article on [SQL Injection](…)" names the
# question's terms and answers nothing.
_READING = re.compile(
    r"^(?:[\dA-Za-z.]+\s+)?(?:references?|related (?:articles?|resources)|further reading|"
    r"resources|see also|external links|参考文献|参考资料|参考|相关链接|延伸阅读|相关资源)$",
    re.IGNORECASE,
)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|https?://\S+")


def _pointer(text: str, section: str) -> bool:
    """A sentence that only points elsewhere: in a references section, or mostly a link's
    name (what is left when its links are taken out is a few words)."""
    if _READING.match(section.strip().strip("#").strip()):
        return True
    if not _LINK.search(text):
        return False
    bare = _LINK.sub("", text)
    return len(bare.split()) <= 4 and len(re.findall(r"[\u3400-\u9fff]", bare)) < 8


def _same_paragraph(text: str, end: int, start: int) -> bool:
    return 0 <= end <= start and "\n" not in text[end:start]


def pick(
    candidates: Sequence[Candidate],
    core_terms: frozenset[str],
    extra_terms: frozenset[str],
    budget: int,
    fill_to: int,
    hits_used: list[int],
    max_hits: int,
    rel: Sequence[float] = (),
    *,
    chinese: bool | None = None,
) -> list[Candidate]:
    """Greedy set cover of `core_terms` (ties broken by `extra_terms`), the sentences closest
    to the question by meaning, a line in the other language than the question's (`chinese`:
    whether it is asked in Chinese; None: no such line), then a short fill; `rel[s.order]` is
    a candidate's relevance (core/answer_relevance.py; none: every sentence 0)."""

    def score(s: Candidate) -> float:
        return float(rel[s.order]) if rel else 0.0

    chosen: list[Candidate] = []

    def allowed(s: Candidate) -> bool:
        return s not in chosen and (s.hit in hits_used or len(hits_used) < max_hits)

    def take(s: Candidate) -> None:
        chosen.append(s)
        if s.hit not in hits_used:
            hits_used.append(s.hit)

    uncovered_core, uncovered_extra = set(core_terms), set(extra_terms)
    while len(chosen) < budget and uncovered_core:
        scored = [
            ((len(s.terms & uncovered_core), len(s.terms & uncovered_extra), *_merit(s)), s)
            for s in candidates
            if allowed(s) and s.terms & uncovered_core
        ]
        if not scored:
            break
        best = max(scored, key=lambda pair: pair[0])[1]
        take(best)
        uncovered_core -= best.terms
        uncovered_extra -= best.terms
    # Whatever their words, the sentences about as close to the question as the closest one:
    # a Chinese sentence that answers an English question; of two sentences on "stored
    # passwords", the one on how to store them beside the set cover's one on peppers. Key terms
    # keep the tie-breaks: a sentence's cosine alone ranks the search's best hit too low.
    closest = max((score(s) for s in candidates), default=0.0)
    related = 0
    if closest >= RELATED:
        near = max(RELATED, closest - NEAR)
        for s in sorted(candidates, key=score, reverse=True):
            if len(chosen) >= budget or score(s) < near:
                break
            if allowed(s):
                take(s)
                related += 1
    need = math.ceil(len(core_terms) / 2)
    words = frozenset(t for t in core_terms if not is_kind_term(t))
    # The other language keeps a line, as it keeps places in the search
    # (core/search/languages.py): the key terms an English question shares with the English
    # hits word for word win every tie, and a Chinese standard that answers it, holding them
    # only through its words' meaning (core/answer.py `_bridged`), would never be quoted.
    if (
        chinese is not None
        and words
        and len(chosen) < budget
        and all(is_chinese(s.text) == chinese for s in chosen)
    ):
        others = [
            s
            for s in candidates
            if allowed(s)
            and is_chinese(s.text) != chinese
            and s.own
            and 2 * len(s.terms & words) > len(words)
        ]
        if others:
            take(max(others, key=lambda s: (len(s.terms & core_terms), *_merit(s))))
            related += 1
    # Set cover alone can answer with one sentence; add a few more that are about the question,
    # from the sections already quoted first: the rest of the passage that answers.
    sections = {(s.hit, s.section) for s in chosen}
    ranked = sorted(
        candidates,
        key=lambda s: (len(s.terms & core_terms), (s.hit, s.section) in sections, *_merit(s)),
        reverse=True,
    )
    for s in ranked:
        if len(chosen) >= min(budget, fill_to + related):
            break
        if (
            allowed(s)
            and len(s.terms & core_terms) >= need
            and (s.own or (s.hit, s.section) in sections)
        ):
            take(s)
    # Read in the documents' order: by hit, then where the sentence stands in it.
    return _continued(sorted(chosen, key=lambda s: (s.hit, s.order)), candidates)


# A sentence that opens with one of these goes on from the one before it: "Passwords should
# never be stored in plain text. Instead, they must be protected using … Argon2id, bcrypt, or
# PBKDF2." Quoted alone, the first says what not to do and the answer is lost.
_GOES_ON = re.compile(
    r"^(?:(?:Instead|However|Therefore|Thus|Hence|Otherwise|Consequently|Rather|"
    r"They|These|This|Such|It|In that case|In addition|Additionally)\b"
    r"|因此|所以|但是|但|然而|否则|此外|另外|同时|相反|这些|这种|这样|它们|它|其)"
)


def _continued(chosen: list[Candidate], candidates: Sequence[Candidate]) -> list[Candidate]:
    """Each chosen sentence with the one after it joined on where that one goes on from it
    (`_GOES_ON`) in the same paragraph, unless that one is chosen already."""
    by_order = {s.order: s for s in candidates}
    taken = {s.order for s in chosen}
    out: list[Candidate] = []
    for s in chosen:
        after = by_order.get(s.order + 1)
        if (
            after is not None
            and after.follows
            and after.hit == s.hit
            and after.order not in taken
            and _GOES_ON.match(after.text)
            and len(s.text) + len(after.text) <= 2 * SENTENCE_CHARS
        ):
            space = "" if is_chinese(s.text[-1:]) else " "
            s = replace(
                s,
                text=f"{s.text}{space}{after.text}",
                terms=s.terms | after.terms,
                span=(s.span[0], after.span[1]),
            )
        out.append(s)
    return out


def _merit(s: Candidate) -> tuple[int, int, int, int, int]:
    """Tie-breaks between sentences of equal coverage: more terms, more in its own words,
    not a bare stub, rank."""
    return len(s.terms), s.own, min(len(s.text), _SHORT_CHARS), -s.hit, -s.order
