"""The agentic loop's nodes: each is `(state, runtime) -> partial update`, and does one thing.

Here the nodes that write and run the queries (`plan`, `retrieve`, `refine`) and what every node
shares (its trace event, the LLM call that falls back, how queries compare); the judge
(`evaluate`) is core/ask/judge.py, `merge` and `answer` are core/ask/answering.py.

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

from ..agents.memory import history_text, resolve_followup, usable_turns
from ..agents.steps import call_or_none
from ..llm.boundary import tidy, tidy_list
from ..llm.prompts import Prompt, T
from ..search.fusion import RRF_K
from ..search.query_terms import key_terms, split_query
from ..text.language import is_chinese
from ..trace import (
    AskEvent,
    PlanEvent,
    QueryHits,
    RefineEvent,
    RetrieveEvent,
)
from .configuration import AgentContext
from .prompts import (
    PLAN,
    REFINE,
    AgentPlan,
    SearchQuery,
)
from .state import AgentState, Evidence, Query, keep_best_evidence

__all__ = [
    "MAX_ASPECTS",
    "MAX_QUERIES",
    "call_llm",
    "emit",
    "normalize_query",
    "offline_aspects",
    "plan",
    "refine",
    "retrieve",
]

log = logging.getLogger(__name__)

MAX_ASPECTS = 4
MAX_QUERIES = 5  # per round: the question (round 1) plus one per aspect
_ASPECT_CHARS = 200  # an "aspect" longer than this is the model pasting text, not naming one
_QUERY_CHARS = 500


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


def emit(runtime: Runtime[AgentContext], event: AskEvent) -> None:
    """Report what a node did on LangGraph's custom stream."""
    runtime.stream_writer(event)


def call_llm(
    runtime: Runtime[AgentContext], role: Prompt[T], variables: Mapping[str, object]
) -> T | None:
    """One LLM call for the role, or None offline or when the call failed (logged)."""
    return call_or_none(runtime.context.llm, role, variables, step=role.name)


def _query(written: SearchQuery | str, aspect: str) -> Query:
    """A query the model wrote, with its rewrites when it gave them (an empty or overlong
    query comes back empty, and `_fresh` drops it)."""
    if isinstance(written, str):
        return Query(tidy(written, _QUERY_CHARS), aspect)
    return Query(tidy(written.query, _QUERY_CHARS), aspect, written.rewrites())


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
    result = call_llm(runtime, PLAN, variables)
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
    emit(runtime, event)
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
    emit(
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
    result = call_llm(runtime, REFINE, variables)
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
    emit(
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
