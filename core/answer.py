"""The grounded summary (docs/architecture.md §5): an answer written only from the search hits, with citations.

With an LLM, one call of the `grounded_answer` role writes the answer and this module checks it:
citations to hits that do not exist are dropped, the rest are renumbered 1..k in order of first
use; under it, the sentences the extractive answer quotes and the model's text leaves out. Without one (or when the model's output is unusable, or the model says not-found while
the hits' own sentences answer), the answer is extractive: the hits' sentences that best cover
the question's key terms, grouped by aspect, marked in `Answer.note` when a model was set aside.
Either way, hits that do not contain the answer give exactly `NOT_FOUND_ZH` or `NOT_FOUND_EN`.

Which sentences the extractive answer quotes is core/answer_sentences.py; the role's variables,
the not-found sentence and the [n] markers numbered as a reply streams, core/answer_reply.py.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from .answer_relevance import Relevance, bridges, builtin_relevance, relevance
from .answer_reply import (
    MARKER,
    NOT_FOUND_EN,
    NOT_FOUND_ZH,
    LiveAnswer,
    grounded_answer_variables,
    says_not_found,
)
from .answer_sentences import RELATED, SENTENCE_CHARS, Candidate, candidates, pick
from .errors import LLMError, LLMOutputError
from .llm.prompts import GROUNDED_ANSWER
from .llm.protocol import StreamingLLM
from .models import Hit
from .text.language import is_chinese
from .text.question_words import (
    content_words,
    held_terms,
    is_kind_term,
    question_terms,
    term_words,
)
from .text.quotes import renumber, unsaid
from .text.sentences import asks_about_scope

if TYPE_CHECKING:
    from .llm.protocol import LLM

__all__ = [
    "NOTE_MODEL_NOT_FOUND",
    "NOTE_OFFLINE_FOUND",
    "NOTE_UNUSABLE",
    "QUOTES_EN",
    "QUOTES_ZH",
    "Answer",
    "Citation",
    "grounded_answer",
    "is_chinese",
    "not_found",
]

# Why an answer with a model is extractive all the same (Answer.note).
NOTE_MODEL_NOT_FOUND = "extractive: the model found nothing"
NOTE_UNUSABLE = "extractive: the model's answer was unusable"
# The model's whole search found nothing and the offline one did (core/service/search.py `ask`).
NOTE_OFFLINE_FOUND = "extractive: the model's search found nothing"
# Above the sentences offline would quote that a model's answer leaves out.
QUOTES_ZH = "原文摘录："
QUOTES_EN = "From the sources:"

MAX_SENTENCES = 6
# The share of the question's key terms the chosen sentences must cover: strictly more than
# half. Key terms name what a question is about; evidence that shares only one of two terms
# (a hit on password storage shares "Java" with a question on Java logging) is about something
# else. Requiring all of them would reject real answers that word one term differently.
COVERAGE_THRESHOLD = 0.5
log = logging.getLogger(__name__)

_MAX_ANSWER_CHARS = 8000  # a grounded answer longer than this is not concise, it is a dump

_CJK_END = re.compile(r"[\u3000-\u303f\uff00-\uffef\u3400-\u9fff]$")


@dataclass(frozen=True)
class Citation:
    """One cited hit: `n` is the number the answer uses for it, `text` what it is cited for.

    `chunk_text` is the whole chunk, so a reader can open it; `highlights` are the (start, end)
    offsets in `chunk_text` of the sentences the extractive answer quotes (empty when the
    answer is the model's: it cites the chunk, not a sentence of it).
    """

    n: int
    chunk_id: int
    document: str
    page: int
    text: str
    chunk_text: str = ""
    highlights: tuple[tuple[int, int], ...] = ()
    ocr: bool = False  # the chunk was read by OCR from a scanned page: its words may be misread


@dataclass(frozen=True)
class Answer:
    """A grounded answer: its text with inline [n] markers, whether it was found, its sources."""

    answer: str
    found: bool
    citations: tuple[Citation, ...] = ()
    # Who wrote it: "llm", or "extractive" (offline, or in place of a model's unusable or
    # not-found reply); `note` says why the model's reply was set aside, "" when it was not.
    method: str = "extractive"
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """Return the answer as plain JSON-ready data."""
        return {
            "answer": self.answer,
            "found": self.found,
            "citations": [asdict(c) for c in self.citations],
            "method": self.method,
            "note": self.note,
        }


def not_found(question: str) -> Answer:
    """Answer that the knowledge base has nothing on the question, in the question's language."""
    return Answer(NOT_FOUND_ZH if is_chinese(question) else NOT_FOUND_EN, False, ())


def grounded_answer(
    question: str,
    hits: Sequence[Hit],
    *,
    llm: LLM | None = None,
    aspects: Sequence[str] = (),
    offline_aspects: Sequence[str] | None = None,
    max_citations: int = 8,
    on_text: Callable[[str], None] | None = None,
    scorer: Relevance | None = None,
) -> Answer:
    """Answer `question` only from `hits`, citing them inline; say "not found" when they can't.

    `offline_aspects` (the agentic loop's offline plan) group the extractive answer that a
    model's unusable or not-found reply gives way to; without them, `aspects` do.
    `on_text`, with a model that streams, gets the answer's text so far each time it grows,
    its citations already numbered as the final answer numbers them; the returned `Answer` is
    what counts (it may differ: a not-found, or the extractive answer when the model's fails).
    `scorer` scores the extractive answer's sentences against the question (default: the
    built-in model, core/answer_relevance.py).
    """
    if not hits:
        return not_found(question)
    scorer = scorer or builtin_relevance()
    if llm is None:
        return _extractive_answer(question, hits, aspects, max_citations, scorer)
    # Where the model's answer gives way, the extractive answer is the one Zhixing gives without
    # a model: grouped under the aspects offline planning gives (`offline_aspects`, the agentic
    # loop's), not under the model's (a 0.5B model's "公司合作开发" for a question about a game's
    # developers picked other sentences and lost answers offline had, issue 34).
    own = aspects if offline_aspects is None else offline_aspects
    try:
        answer = _llm_answer(question, hits, llm, max_citations, on_text)
    except LLMError as exc:
        # A reply in the wrong shape twice, an answer with no text or no valid citation,
        # or an endpoint that failed: the extractive answer still works.
        log.info("The grounded answer falls back to the extractive one: %s", exc)
        return replace(
            _extractive_answer(question, hits, own, max_citations, scorer),
            note=NOTE_UNUSABLE,
        )
    extractive = _extractive_answer(question, hits, own, max_citations, scorer)
    if answer.found:
        return _with_quotes(answer, extractive, question)
    # The model adds, never subtracts: its not-found does not outweigh hits whose own
    # sentences answer the question (a weak model under a grammar says not-found early).
    if extractive.found:
        log.info("The model found nothing; the extractive answer cites the hits instead.")
        return replace(extractive, note=NOTE_MODEL_NOT_FOUND)
    return answer


def _with_quotes(answer: Answer, extractive: Answer, question: str) -> Answer:
    """The model's answer, then under `QUOTES_ZH`/`QUOTES_EN` the extractive answer's sentences
    it does not say already (core/text/quotes.py), their hits numbered after the model's.

    The model adds, never subtracts: a small model's answer can leave out the very number or
    name the sentence offline would quote (issue 34's bench), so that sentence stays in sight.
    """
    if not extractive.found:
        return answer
    quoted = unsaid(extractive.answer.splitlines(), answer.answer)
    if not quoted:
        return answer
    by_chunk = {c.chunk_id: c for c in answer.citations}
    numbers: dict[int, int] = {}  # the extractive answer's [n] -> the combined answer's
    added: list[Citation] = []
    for c in extractive.citations:
        if c.chunk_id in by_chunk:
            numbers[c.n] = by_chunk[c.chunk_id].n
            if c.highlights:  # the sentences quoted, highlighted in the model's citation
                by_chunk[c.chunk_id] = replace(by_chunk[c.chunk_id], highlights=c.highlights)
        else:
            numbers[c.n] = len(answer.citations) + len(added) + 1
            added.append(replace(c, n=numbers[c.n]))
    heading = QUOTES_ZH if is_chinese(question) else QUOTES_EN
    text = f"{answer.answer}\n\n{heading}\n\n{renumber(quoted, lambda n: numbers.get(n, n))}"
    cited = tuple(by_chunk[c.chunk_id] for c in answer.citations) + tuple(added)
    return replace(answer, answer=text, citations=cited)


# --- extractive answer ----------------------------------------------------------------------


def _extractive_answer(
    question: str,
    hits: Sequence[Hit],
    aspects: Sequence[str],
    max_citations: int,
    scorer: Relevance | None,
) -> Answer:
    """Answer with the hits' own sentences that best cover the question, grouped by aspect.

    Found when the chosen sentences hold more than COVERAGE_THRESHOLD of the key terms, or
    one of them, in the other language, is at least RELATED to the question by meaning.
    """
    asked_terms = frozenset(question_terms(question))
    aspect_terms = [(a, frozenset(question_terms(a)) or frozenset({a.lower()})) for a in aspects]
    all_terms = asked_terms.union(*(t for _, t in aspect_terms))
    sentences = candidates(hits, all_terms, scope_ok=asks_about_scope(question))
    sentences = _bridged(question, aspects, sentences, scorer)
    chinese = is_chinese(question)
    scores = relevance(scorer, [question, *aspects], [s.text for s in sentences])
    hits_used: list[int] = []
    groups: list[tuple[str, list[Candidate]]] = []
    if aspect_terms:
        budget = max(1, MAX_SENTENCES // len(aspect_terms))
        for row, (aspect, terms) in enumerate(aspect_terms, start=1):
            taken = {s for _, group in groups for s in group}
            pool = [s for s in sentences if s not in taken]
            rel = scores[row].tolist()  # the aspect's own: the question's spans them all
            picked = pick(
                pool,
                terms,
                asked_terms,
                budget,
                min(budget, 3),
                hits_used,
                max_citations,
                rel,
                chinese=chinese,
            )
            if picked:
                groups.append((aspect, picked))
    else:
        picked = pick(
            sentences,
            asked_terms,
            frozenset(),
            MAX_SENTENCES,
            3,
            hits_used,
            max_citations,
            scores[0].tolist(),
            chinese=chinese,
        )
        groups.append(("", picked))
    if len(aspect_terms) > 1:
        return _per_aspect(question, hits, aspect_terms, groups, scores[1:].tolist())
    chosen = [s for _, group in groups for s in group]
    covered = frozenset().union(*(s.terms for s in chosen))
    terms_hold = bool(all_terms) and len(covered & all_terms) > COVERAGE_THRESHOLD * len(all_terms)
    if not (terms_hold or _related(question, chosen, scores.max(axis=0).tolist())):
        return not_found(question)
    return _render(question, hits, [("", group) for _, group in groups])


def _bridged(
    question: str, aspects: Sequence[str], sentences: list[Candidate], scorer: Relevance | None
) -> list[Candidate]:
    """The sentences in the other language than the question's, with the key terms their words
    stand for (core/answer_relevance.py `bridges`): "验证会话令牌…" holds "session" and "token"
    of "What does ASVS require for session tokens?". Its heading's words count as its
    heading's terms do (core/answer_sentences.py `candidates`)."""
    chinese = is_chinese(question)
    other = [s for s in sentences if is_chinese(s.text) != chinese]
    if not other:
        return sentences
    written: dict[str, str] = {}
    for text in (question, *aspects):
        written.update(term_words(text))
    words = {s.order: content_words(s.text) for s in other}
    under = {s.order: content_words(s.section) for s in other}
    # The question's side: its terms, and the words of the hits in its language that are not
    # one of them written otherwise ("tokens" for "token").
    same = (
        w
        for s in sentences
        if is_chinese(s.text) == chinese
        for w in (*content_words(s.text), *content_words(s.section))
    )
    found = bridges(
        scorer,
        written,
        [w for s in other for w in (*words[s.order], *under[s.order])],
        [w for w in same if not held_terms(list(written), w)],
    )
    if not found:
        return sentences
    # A sentence keeps its bridges only where they make it hold most of what the question (or
    # an aspect) is about, and two of its terms at least: one word's translation is too little
    # to quote a sentence for ("保存" for "kept" in "Where should encryption keys be kept?"
    # brings "日志至少保存 180 天"; "职业" for "杨群的职业是什么？", whose name jieba cuts into
    # single characters, brings any English sentence on a profession).
    asked = [
        frozenset(t for t in question_terms(text) if not is_kind_term(t))
        for text in (question, *aspects)
    ]
    out = []
    for s in sentences:
        if s.order in words:
            held = {found[w] for w in words[s.order] if w in found} - s.terms
            heading = {found[w] for w in under[s.order] if w in found}
            now = s.terms | held | heading
            if any(len(now & a) > max(1, COVERAGE_THRESHOLD * len(a)) for a in asked):
                s = replace(s, terms=now, own=s.own + len(held))
        out.append(s)
    return out


def _related(question: str, chosen: Sequence[Candidate], rel: Sequence[float]) -> bool:
    """Whether one of the chosen sentences answers by meaning: in the other language than the
    question's, at least RELATED to it.

    In the question's own language the key terms judge: sentences on a neighbouring topic
    share words with the question and score as high as answers do ("Never store passwords in
    plain text" is 0.44 from "How often must passwords be rotated?"). Across languages no
    word is shared, and a cosine that high is rare unless the sentence answers.
    """
    chinese = is_chinese(question)
    return any(rel[s.order] >= RELATED and is_chinese(s.text) != chinese for s in chosen)


def _per_aspect(
    question: str,
    hits: Sequence[Hit],
    aspect_terms: Sequence[tuple[str, frozenset[str]]],
    groups: Sequence[tuple[str, Sequence[Candidate]]],
    rel: Sequence[Sequence[float]],
) -> Answer:
    """Apply the not-found rule to each aspect: answer the covered ones, name the others.

    An aspect is covered when its sentences hold at least COVERAGE_THRESHOLD of the terms that
    set it apart from the other aspects (the agentic judge's rule): a frame they all share,
    like "Java 应用", proves nothing; or when one of them is RELATED to it by meaning. When no
    aspect is covered the answer is the plain not-found sentence.
    """
    shared = frozenset.intersection(*(terms for _, terms in aspect_terms))
    picked = dict(groups)
    found, missing = [], []
    for (aspect, terms), aspect_rel in zip(aspect_terms, rel, strict=True):
        own = terms - shared or terms
        group = picked.get(aspect, ())
        covered = frozenset().union(*(s.terms for s in group)) & own
        if group and (
            len(covered) >= COVERAGE_THRESHOLD * len(own) or _related(question, group, aspect_rel)
        ):
            found.append((aspect, group))
        else:
            missing.append(aspect)
    if not found:
        return not_found(question)
    answer = _render(question, hits, found)
    if missing:
        chinese = is_chinese(question)
        lines = [
            f"{_label(a)}：{NOT_FOUND_ZH}" if chinese else f"{_label(a)}: {NOT_FOUND_EN}"
            for a in missing
        ]
        answer = Answer("\n\n".join([answer.answer, *lines]), True, answer.citations)
    return answer


def _label(aspect: str) -> str:
    """An aspect as a label: without the question's own end ("多久？" + "：" reads "多久？：")."""
    return aspect.strip().rstrip("?？。.!！:：;；,， ")


def _render(
    question: str,
    hits: Sequence[Hit],
    groups: Sequence[tuple[str, Sequence[Candidate]]],
) -> Answer:
    """Write the chosen sentences as lines ending in [n], numbering hits by first use.

    Each aspect's label opens a paragraph of its own: in Markdown a line right after a list
    item continues that item, which glued the label onto the sentence above it.
    """
    chinese = is_chinese(question)
    colon = "：" if chinese else ":"
    numbers: dict[int, int] = {}
    cited: dict[int, list[Candidate]] = {}
    blocks: list[str] = []
    for aspect, group in groups:
        lines = [f"{_label(aspect)}{colon}"] if aspect else []
        for s in group:
            n = numbers.setdefault(s.hit, len(numbers) + 1)
            cited.setdefault(s.hit, []).append(s)
            # "。[1]" in Chinese; a space where the sentence ends in a word or a number
            # (a table row's "… (L1: ✓ · CWE: 384) [1]", English).
            space = "" if chinese and _CJK_END.search(s.text) else " "
            lines.append(f"- {s.text}{space}[{n}]")
        blocks.append("\n".join(lines))
    citations = tuple(_cited(n, hits[index], cited[index]) for index, n in numbers.items())
    return Answer("\n\n".join(blocks), True, citations)


def _cited(n: int, hit: Hit, sentences: Sequence[Candidate]) -> Citation:
    """A hit's citation: the sentences it is cited for, and where they lie in its text."""
    ordered = sorted(sentences, key=lambda s: s.span)
    text = " ".join(s.text for s in ordered)
    return _citation(n, hit, text, tuple(s.span for s in ordered))


def _citation(
    n: int, hit: Hit, text: str, highlights: tuple[tuple[int, int], ...] = ()
) -> Citation:
    return Citation(
        n=n,
        chunk_id=hit.chunk_id,
        document=hit.document,
        page=hit.page,
        text=text,
        chunk_text=hit.text,
        highlights=highlights,
        ocr=hit.ocr,
    )


# --- LLM answer -----------------------------------------------------------------------------


def _llm_answer(
    question: str,
    hits: Sequence[Hit],
    llm: LLM,
    max_citations: int,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """One `grounded_answer` call, then check and renumber its citations."""
    role, variables = GROUNDED_ANSWER, grounded_answer_variables(question, hits)
    if on_text is not None and isinstance(llm, StreamingLLM):
        shown = LiveAnswer(len(hits), max_citations, on_text)
        reply = llm.call_streaming(role, variables, shown.update)
    else:
        reply = llm.call(role, variables)
    if not reply.found or says_not_found(reply.answer):
        # found=true over the not-found sentence is still a not-found (a weak model writes
        # the answer field first, as the schema asks, and then the verdict it was told to).
        return replace(not_found(question), method="llm")
    if not reply.answer.strip() or len(reply.answer) > _MAX_ANSWER_CHARS:
        raise LLMOutputError("The model said it found the answer but gave no usable text.")
    valid = range(1, len(hits) + 1)
    inline = [int(n) for group in MARKER.findall(reply.answer) for n in re.split(r"[,，]", group)]
    order = [n for n in dict.fromkeys([*inline, *reply.cited]) if n in valid][:max_citations]
    if not order:  # an answer that cites no hit it was given is not grounded
        raise LLMOutputError("The model's answer cites none of the hits it was given.")
    renumber = {old: new for new, old in enumerate(order, start=1)}

    def rewrite(match: re.Match[str]) -> str:
        olds = [int(n) for n in re.split(r"[,，]", match.group(1))]
        kept = [renumber[o] for o in dict.fromkeys(olds) if o in renumber]
        lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
        return lead + "".join(f"[{n}]" for n in kept) if kept else ""

    text = MARKER.sub(rewrite, reply.answer).strip()
    uncited = [renumber[o] for o in order if o not in inline]
    if uncited:  # cited in the list but not inline: keep the answer checkable all the same
        text += " " + "".join(f"[{n}]" for n in uncited)
    citations = tuple(
        _citation(renumber[old], hits[old - 1], _excerpt(hits[old - 1].text)) for old in order
    )
    return Answer(text, True, citations, method="llm")


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SENTENCE_CHARS else flat[: SENTENCE_CHARS - 1] + "…"
