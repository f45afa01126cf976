"""Which of the hits' whole sentences the extractive answer quotes (core/answer.py).

Each sentence (core/text/sentences.py) holds some of the question's key terms, its section
heading's included; a greedy set cover of the key terms picks the fewest sentences that hold
them, ties broken by the merit of each, then a short fill from the sections already quoted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .models import Hit
from .text.navigation import is_navigation
from .text.question_words import held_terms, is_kind_term
from .text.sentence_cuts import clip
from .text.sentences import hit_sentences

__all__ = ["SENTENCE_CHARS", "Candidate", "candidates", "pick"]

SENTENCE_CHARS = 300  # a longer "sentence" (a table row, a run-on list) is cut for display
_SHORT_CHARS = 16  # sentences shorter than this lose ties: stubs say little


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
            key = " ".join(sentence.text.split())
            if key in seen:
                continue  # overlapping chunks repeat sentences: cite the best-ranked one
            seen.add(key)
            own = held_terms(wanted, sentence.text)
            heading = held_terms(wanted, sentence.heading) - {t for t in wanted if is_kind_term(t)}
            text = clip(sentence.text, SENTENCE_CHARS)
            span = (sentence.start, sentence.end)
            out.append(
                Candidate(index, len(out), text, own | heading, len(own), span, sentence.heading)
            )
    return out


def pick(
    candidates: Sequence[Candidate],
    core_terms: frozenset[str],
    extra_terms: frozenset[str],
    budget: int,
    fill_to: int,
    hits_used: list[int],
    max_hits: int,
) -> list[Candidate]:
    """Greedy set cover of `core_terms` (ties broken by `extra_terms`), then a short fill."""
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
    # Set cover alone can answer with one sentence; add a few more that are about the question,
    # from the sections already quoted first: the rest of the passage that answers.
    need = math.ceil(len(core_terms) / 2)
    sections = {(s.hit, s.section) for s in chosen}
    ranked = sorted(
        candidates,
        key=lambda s: (len(s.terms & core_terms), (s.hit, s.section) in sections, *_merit(s)),
        reverse=True,
    )
    for s in ranked:
        if len(chosen) >= fill_to:
            break
        if (
            allowed(s)
            and len(s.terms & core_terms) >= need
            and (s.own or (s.hit, s.section) in sections)
        ):
            take(s)
    # Read in the documents' order: by hit, then where the sentence stands in it.
    return sorted(chosen, key=lambda s: (s.hit, s.order))


def _merit(s: Candidate) -> tuple[int, int, int, int, int]:
    """Tie-breaks between sentences of equal coverage: more terms, more in its own words,
    not a bare stub, rank."""
    return len(s.terms), s.own, min(len(s.text), _SHORT_CHARS), -s.hit, -s.order
