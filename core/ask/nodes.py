"""The agentic loop's nodes: each is `(state, runtime) -> partial update`, and does one thing.

Every node reports what it did as a trace event on LangGraph's custom stream
(`runtime.stream_writer`): one of core/trace.py's `AskEvent`s, tagged by `node`. With an LLM in the context, `plan`
and `refine` make one fast call each and `evaluate` one chat call, so a round costs at most two
calls on the critical path (the queries plan and refine write carry the search's rewrites, so
searching them calls no LLM); without one, the same nodes fall back to term heuristics. An LLM
that fails mid-run degrades that step to the heuristic (the event says so) instead of losing
the evidence gathered so far.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from ..agents.memory import history_text, resolve_followup, turn_record, usable_turns
from ..errors import LLMError
from ..llm.boundary import tidy, tidy_list
from ..llm.prompts import Prompt, T
from ..models import Hit
from ..search.fusion import RRF_K
from ..search.query_terms import key_terms, split_query
from ..text.language import is_chinese
from ..text.question_words import asked_kinds, holds, is_cue, is_generic
from ..text.sentences import Sentence, asks_about_scope, hit_sentences
from ..trace import (
    AnswerEvent,
    AnswerTextEvent,
    AskEvent,
    EvaluateEvent,
    MergeEvent,
    PlanEvent,
    QueryHits,
    RefineEvent,
    RetrieveEvent,
)
from .configuration import AgentContext
from .prompts import (
    EVALUATE,
    PLAN,
    REFINE,
    AgentPlan,
    EvidenceVerdict,
    SearchQuery,
)
from .state import AgentState, Evidence, Query, keep_best_evidence

__all__ = [
    "answer",
    "evaluate",
    "merge",
    "normalize_query",
    "plan",
    "refine",
    "retrieve",
]

log = logging.getLogger(__name__)

MAX_ASPECTS = 4
MAX_QUERIES = 5  # per round: the question (round 1) plus one per aspect
_ASPECT_CHARS = 200  # an "aspect" longer than this is the model pasting text, not naming one
_QUERY_CHARS = 500
_EXCERPT_CHARS = 400  # of each evidence text shown to the judge
_JUDGED_EVIDENCE = 20


def normalize_query(text: str) -> str:
    """The form two queries are compared in: case-folded, spaces collapsed, no end punctuation."""
    return " ".join(text.casefold().split()).rstrip("?？。.!！ ")


def _fresh(candidates: Sequence[Query], asked: Sequence[str], limit: int) -> list[Query]:
    """The candidates never asked before (nor twice in the list), at most `limit` of them."""
    seen = {normalize_query(q) for q in asked}
    fresh: list[Query] = []
    for query in candidates:
        key = normalize_query(query.text)
        if key and key not in seen:
            seen.add(key)
            fresh.append(query)
    return fresh[:limit]


def _distinct_terms(terms: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Per aspect, the terms that set it apart: a frame shared by every aspect proves nothing,
    nor does a generic word ("管理" of 密钥管理 is found in any section on 会话管理)."""
    specific = {a: [w for w in t if not is_generic(w)] or list(t) for a, t in terms.items()}
    if len(specific) < 2:
        return specific
    shared = set.intersection(*(set(t) for t in specific.values()))
    return {a: [w for w in t if w not in shared] or list(t) for a, t in specific.items()}


def _holds(term: str, sentence: Sentence) -> bool:
    """A sentence holds a term in its words or its heading's (under "4 会话管理", "空闲会话在
    15 分钟后失效" is about 会话管理); a question word ("多久") is held by an answer of its kind."""
    kinds = asked_kinds(term) if is_cue(term) else ()
    if kinds:
        return holds(kinds[0], sentence.text)
    folded = term.casefold()
    return folded in sentence.text.casefold() or folded in sentence.heading.casefold()


def _gaps(terms: Mapping[str, list[str]], sentences: Sequence[Sentence]) -> dict[str, list[str]]:
    """Per aspect, the key terms no evidence sentence holds (the offline judge's input).

    The sentences are whole ones (core/text/sentences.py, the answer's own), each with the
    heading it stands under: a heading alone is not evidence, nor is a note on the document's
    scope unless the question asks about scope."""
    return {
        aspect: [w for w in words if not any(_holds(w, s) for s in sentences)]
        for aspect, words in _distinct_terms(terms).items()
    }


def _covered(words: Sequence[str], gaps: Sequence[str], has_evidence: bool) -> bool:
    # At least half of an aspect's terms must appear: one stray common word is not coverage.
    if not words:
        return has_evidence
    return 2 * (len(words) - len(gaps)) >= len(words)


def _emit(runtime: Runtime[AgentContext], event: AskEvent) -> None:
    runtime.stream_writer(event)


def _call(
    runtime: Runtime[AgentContext], role: Prompt[T], variables: Mapping[str, object]
) -> T | None:
    """One LLM call for the role, or None offline or when the call failed (logged)."""
    llm = runtime.context.llm
    if llm is None:
        return None
    try:
        return llm.call(role, variables)
    except LLMError as exc:
        log.warning("The %s step falls back to the offline heuristic: %s", role.name, exc)
        return None


def _query(written: SearchQuery | str, aspect: str) -> Query:
    """A query the model wrote, with its rewrites when it gave them (an empty or overlong
    query comes back empty, and `_fresh` drops it)."""
    if isinstance(written, str):
        return Query(tidy(written, _QUERY_CHARS), aspect)
    return Query(tidy(written.query, _QUERY_CHARS), aspect, written.rewrites())


def _as_aspects(names: Sequence[str], aspects: Sequence[str]) -> list[str]:
    """The listed aspects a judge meant by `names`: models respell, shorten or translate them
    ("session fixation" for "会话固定 (session fixation)"); a name matching none is dropped."""
    out: list[str] = []
    for name in names:
        key = normalize_query(name)
        if not key:
            continue
        match = next((a for a in aspects if normalize_query(a) == key), None)
        if match is None:
            match = next(
                (a for a in aspects if key in normalize_query(a) or normalize_query(a) in key),
                None,
            )
        if match is None:
            words = {w.casefold() for w in key_terms(name)}
            scored = [(len(words & {w.casefold() for w in key_terms(a)}), a) for a in aspects]
            best = max(scored, default=(0, ""))
            if best[0] and 2 * best[0] >= len(words):
                match = best[1]
        if match is not None and match not in out:
            out.append(match)
    return out


# --- plan -------------------------------------------------------------------------------------


def _speaks_like(result: AgentPlan, question: str) -> bool:
    """Whether the plan's aspects and queries are written in the question's language."""
    written = [*result.aspects, *(q if isinstance(q, str) else q.query for q in result.queries)]
    text = " ".join(w for w in written if w.strip())
    return not text or is_chinese(text) == is_chinese(question)


def offline_aspects(question: str) -> list[str]:
    """The aspects of a question as planning without a model splits it."""
    return split_query(question, max_parts=MAX_ASPECTS) or [question]


def plan(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Resolve a follow-up against the thread's earlier turns, split the question into 1–4
    aspects and write round 1's queries."""
    original = state["question"].strip()
    turns = usable_turns(state.get("turns", []), runtime.context.visible)
    variables = {"question": original, "history": history_text(turns)}
    result = _call(runtime, PLAN, variables)
    if result is not None and not _speaks_like(result, original):
        # A plan in another language than the question's searches for words the documents
        # answering it do not use: the offline plan's aspects and queries replace it.
        log.info("The model planned in another language than the question's; planning offline.")
        result = None
    written = tidy(result.question, limit=_QUERY_CHARS) if result is not None and turns else ""
    question = written or resolve_followup(original, turns)
    if result is not None:
        aspects = tidy_list(result.aspects, limit=_ASPECT_CHARS, max_items=MAX_ASPECTS)
        aspects = aspects or [question]
        extra = [_query(q, a) for q, a in zip(result.queries, aspects, strict=False)]
        whole = SearchQuery(
            query=question,
            hypothetical_answer=result.hypothetical_answer,
            generalization=result.generalization,
            keywords=result.keywords,
        ).rewrites(sub_questions=[q.text for q in extra] if len(extra) > 1 else ())
    else:
        aspects = offline_aspects(question)
        extra = [Query(a, a) for a in aspects]
        whole = None
    candidates = [Query(question, rewrites=whole)]
    candidates += extra if len(aspects) > 1 or result is not None else []
    queries = _fresh(candidates, [], MAX_QUERIES)
    terms = {a: key_terms(a) for a in aspects}
    event = PlanEvent(
        node="plan",
        round=1,
        aspects=aspects,
        queries=[q.text for q in queries],
        llm=result is not None,
    )
    if question != original:
        event["resolved"] = question
    _emit(runtime, event)
    return {
        "question": question,
        "original": original,
        "max_rounds": runtime.context.max_rounds,
        "aspects": aspects,
        "terms": terms,
        "round": 1,
        "queries": queries,
        "again": False,
    }


# --- retrieve ---------------------------------------------------------------------------------


def _best_aspect(text: str, terms: Mapping[str, list[str]], default: str) -> str:
    """The aspect whose terms the text mentions most (for hits of the whole-question query)."""
    folded = text.casefold()
    scores = {a: sum(w.casefold() in folded for w in words) for a, words in terms.items()}
    best = max(scores, key=lambda a: scores[a], default=default)
    return best if scores.get(best) else default


def retrieve(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the round's queries; keep the new evidence and count the hits of each strategy."""
    ctx = runtime.context
    queries = state.get("queries", [])
    results = (
        ctx.retrieve([q.text for q in queries], [q.rewrites for q in queries]) if queries else []
    )
    known = state.get("evidence", {})
    aspects = state.get("aspects", [])
    found: dict[int, Evidence] = {}
    per_query: list[QueryHits] = []
    total: Counter[str] = Counter()
    for query, hits in zip(queries, results, strict=True):
        counts = Counter(s for hit in hits for s in hit.strategies)
        total.update(counts)
        per_query.append(
            QueryHits(
                query=query.text, aspect=query.aspect, hits=len(hits), hits_by_strategy=dict(counts)
            )
        )
        direct = not query.aspect and state["round"] == 1  # the question's own search
        for rank, hit in enumerate(hits[: ctx.evidence_per_round], start=1):
            aspect = query.aspect or _best_aspect(hit.text, state.get("terms", {}), aspects[0])
            vote = 1 / (RRF_K + rank)
            item = Evidence(
                hit,
                aspect,
                query.text,
                state["round"],
                rank,
                *((vote, 0.0) if direct else (0.0, vote)),
            )
            found[hit.chunk_id] = keep_best_evidence(found, {hit.chunk_id: item})[hit.chunk_id]
    new = sum(chunk_id not in known for chunk_id in found)
    _emit(
        runtime,
        RetrieveEvent(
            node="retrieve",
            round=state["round"],
            queries=[q.text for q in queries],
            per_query=per_query,
            hits_by_strategy=dict(total),
            new_evidence=new,
            evidence=len(known) + new,
        ),
    )
    return {"asked": [q.text for q in queries], "evidence": found}


# --- evaluate ---------------------------------------------------------------------------------


def _ranked(evidence: Mapping[int, Evidence]) -> list[Evidence]:
    return sorted(evidence.values(), key=lambda e: (e.round, e.rank, e.hit.chunk_id))


def _judge_with_llm(state: AgentState, runtime: Runtime[AgentContext]) -> EvidenceVerdict | None:
    if runtime.context.llm is None:
        return None
    shown = _ranked(state.get("evidence", {}))[:_JUDGED_EVIDENCE]
    excerpts = "\n".join(
        f"[{n}] ({e.aspect or 'question'}) {' '.join(e.hit.text.split())[:_EXCERPT_CHARS]}"
        for n, e in enumerate(shown, start=1)
    )
    variables = {
        "question": state["question"],
        "aspects": "\n".join(f"- {a}" for a in state.get("aspects", [])),
        "evidence": excerpts or "(none)",
    }
    return _call(runtime, EVALUATE, variables)


def evaluate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge, per aspect, whether the evidence suffices; name the aspects still missing."""
    aspects = state.get("aspects", [])
    hits = [e.hit for e in state.get("evidence", {}).values()]
    scope_ok = asks_about_scope(state.get("question", ""))
    sentences = [s for hit in hits for s in hit_sentences(hit, scope_ok=scope_ok)]
    gaps = _gaps(state.get("terms", {}), sentences)
    verdict = _judge_with_llm(state, runtime)
    if verdict is not None:
        sufficient = verdict.sufficient
        covered = _as_aspects(verdict.covered, aspects)
        missing = [] if sufficient else _as_aspects(verdict.missing, aspects)
        if not sufficient and not missing:
            missing = [a for a in aspects if a not in covered] or list(aspects)
        covered = [a for a in covered if a not in missing]
    else:
        distinct = _distinct_terms(state.get("terms", {}))
        found = bool(sentences)
        covered = [a for a in aspects if _covered(distinct.get(a, []), gaps.get(a, []), found)]
        missing = [a for a in aspects if a not in covered]
        sufficient = not missing
    _emit(
        runtime,
        EvaluateEvent(
            node="evaluate",
            round=state["round"],
            sufficient=sufficient,
            covered=covered,
            missing=missing,
            judge="llm" if verdict is not None else "coverage",
        ),
    )
    gaps = {a: gaps.get(a) or key_terms(a) for a in missing}
    return {"sufficient": sufficient, "covered": covered, "missing": missing, "gaps": gaps}


# --- refine -----------------------------------------------------------------------------------


def _offline_candidates(state: AgentState, ctx: AgentContext) -> list[Query]:
    """Per missing aspect: the aspect itself, its uncovered terms, then those terms' neighbours."""
    candidates: list[Query] = []
    for aspect in state.get("missing", []):
        lacking = state.get("gaps", {}).get(aspect) or key_terms(aspect)
        candidates.append(Query(aspect, aspect))
        if lacking:
            candidates.append(Query(" ".join(lacking), aspect))
        if ctx.neighbours is not None and lacking:
            related = [n for n in ctx.neighbours(lacking) if n.strip()][:3]
            if related:
                candidates.append(Query(" ".join([*lacking, *related]), aspect))
                candidates.extend(Query(name, aspect) for name in related)
    return candidates


def refine(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Open the next round with new queries aimed at the gaps, never an earlier query again."""
    ctx = runtime.context
    missing = state.get("missing", [])
    asked = state.get("asked", [])
    round_ = state["round"] + 1
    variables = {
        "question": state["question"],
        "missing": "\n".join(f"- {a}" for a in missing),
        "asked": "\n".join(f"- {q}" for q in asked),
    }
    result = _call(runtime, REFINE, variables)
    # Each new query is credited to the missing aspect whose terms it names, for `merge`.
    targets = {a: state.get("gaps", {}).get(a) or key_terms(a) for a in missing}
    default = missing[0] if missing else ""
    llm_queries = [
        _query(q, _best_aspect(q if isinstance(q, str) else q.query, targets, default))
        for q in (result.queries if result else [])
    ]
    queries = _fresh(llm_queries, asked, MAX_QUERIES)
    if not queries:  # offline, or the model only repeated itself
        queries = _fresh(_offline_candidates(state, ctx), asked, MAX_QUERIES)
    _emit(
        runtime,
        RefineEvent(
            node="refine",
            round=round_ if queries else state["round"],
            missing=missing,
            queries=[q.text for q in queries],
            llm=bool(result),
        ),
    )
    if not queries:
        return {"queries": []}
    return {"queries": queries, "round": round_}


# --- merge and answer -------------------------------------------------------------------------


def merge(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Rank the evidence, at most `cap` per aspect: the question's own first search in its
    order, then what only the other queries (aspects, refinements) found, by their summed
    reciprocal-rank votes, so evidence that several of them found comes first.

    The rounds add evidence after the question's hits and never reorder them. Measured offline
    on seven sets (benchmarks/bench_quality.py, `ask` replayed with the support votes added to
    the question's at weights 0.005–0.1): weight 0 was chosen leaving out each set in turn, as
    every weight that reordered the question's hits lowered MRR@10 more than it raised R@5 (at
    0.05: multihop-rag-500 R@5 0.776 → 0.788 but MRR@10 0.933 → 0.854), because
    an aspect's or a refinement's ranks answer a narrower question than the one asked. What the
    rounds add is pooled recall: the gold passages anywhere in the evidence the answer reads
    (multihop-rag-500 0.858 in one search's top 10 → 0.888, crud-lede 0.930 → 0.940).
    """
    cap = runtime.context.evidence_per_round
    aspects = state.get("aspects", [])
    groups: dict[str, list[Evidence]] = {a: [] for a in aspects}
    ranked = sorted(
        state.get("evidence", {}).values(),
        key=lambda e: (-e.direct, -e.support, e.round, e.rank, e.hit.chunk_id),
    )
    merged: list[Hit] = []
    for item in ranked:
        group = groups.setdefault(item.aspect, [])
        if len(group) < cap:
            group.append(item)
            merged.append(item.hit)
    capped = groups
    _emit(
        runtime,
        MergeEvent(
            node="merge",
            round=state["round"],
            evidence=len(merged),
            by_aspect={a: len(items) for a, items in capped.items()},
        ),
    )
    return {"merged": merged}


def answer(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Write the answer from the merged evidence (the answerer cites it or says not found)."""
    ctx, n = runtime.context, state["round"]
    question, evidence, aspects = (
        state["question"],
        state.get("merged", []),
        state.get("aspects", []),
    )
    if ctx.answer_stream is not None:

        def show(text: str) -> None:
            _emit(runtime, AnswerTextEvent(node="answer_text", round=n, text=text))

        result = ctx.answer_stream(question, evidence, aspects, show)
    else:
        result = ctx.answer(question, evidence, aspects)
    _emit(runtime, AnswerEvent(node="answer", round=n, found=bool(result.found)))
    if not result.found and state.get("sufficient") and n < state.get("max_rounds", 1):
        # The judge said the evidence suffices, yet no answer came of it: the judge was wrong,
        # so search again for every aspect rather than end on a not-found.
        return {"sufficient": False, "missing": list(aspects), "again": True}
    said = str(result.to_json().get("answer", ""))
    turn = turn_record(state.get("original", question), question, said, ctx.kbs)
    return {"answer": result, "turns": [turn], "again": False}
