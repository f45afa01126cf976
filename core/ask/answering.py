"""The agentic loop's last nodes, each `(state, runtime) -> partial update`: `merge` ranks and
caps the evidence the rounds gathered, `answer` writes the answer from it (or sends the loop
round again when the judge was wrong).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ..agents.memory import turn_record
from ..models import Hit
from ..trace import AnswerEvent, AnswerTextEvent, MergeEvent
from .configuration import AgentContext
from .nodes import emit
from .state import AgentState, Evidence

__all__ = ["answer", "merge"]


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
    emit(
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
            emit(runtime, AnswerTextEvent(node="answer_text", round=n, text=text))

        result = ctx.answer_stream(question, evidence, aspects, show)
    else:
        result = ctx.answer(question, evidence, aspects)
    emit(runtime, AnswerEvent(node="answer", round=n, found=bool(result.found)))
    if not result.found and state.get("sufficient") and n < state.get("max_rounds", 1):
        # The judge said the evidence suffices, yet no answer came of it: the judge was wrong,
        # so search again for every aspect rather than end on a not-found.
        return {"sufficient": False, "missing": list(aspects), "again": True}
    said = str(result.to_json().get("answer", ""))
    turn = turn_record(state.get("original", question), question, said, ctx.kbs)
    return {"answer": result, "turns": [turn], "again": False}
