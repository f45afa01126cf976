"""The agentic loop's state: a typed dict whose accumulating fields carry reducers.

`asked` (every query ever sent) appends; `evidence` merges by chunk id, keeps the best rank and
adds up the votes, so evidence is de-duplicated across rounds by the reducer rather than by
each node.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any

# pydantic derives the graphs' JSON schemas (LangGraph Studio's forms) only from this TypedDict
# on Python 3.11.
from typing_extensions import TypedDict

from ..agents.memory import remember
from ..answer import Answer
from ..models import Hit
from ..search.rewrite import QueryRewrites

__all__ = ["AgentState", "AskInput", "AskOutput", "Evidence", "Query", "keep_best_evidence"]


@dataclass(frozen=True)
class Query:
    """One search query and the aspect it is aimed at ("" for the question as a whole)."""

    text: str
    aspect: str = ""
    rewrites: QueryRewrites | None = None  # from plan/refine's LLM call; None: the rules


@dataclass(frozen=True)
class Evidence:
    """A hit kept as evidence, with the round, query and aspect that found it at its best rank."""

    hit: Hit
    aspect: str
    query: str
    round: int
    rank: int  # 1-based position in the fused list of the query that found it
    # Reciprocal-rank votes (core/ask/nodes.py `retrieve`): `direct` of the question's own
    # first search, `support` of every other query (aspects, refinements) that found it.
    direct: float = 0.0
    support: float = 0.0


def keep_best_evidence(
    left: Mapping[int, Evidence], right: Mapping[int, Evidence]
) -> dict[int, Evidence]:
    """Merge evidence by chunk id: the votes add up, and a later find replaces an earlier one's
    round, query and aspect only at a better rank."""
    merged = dict(left)
    for chunk_id, found in right.items():
        kept = merged.get(chunk_id)
        if kept is None:
            merged[chunk_id] = found
            continue
        best = found if found.rank < kept.rank else kept
        merged[chunk_id] = replace(
            best, direct=kept.direct + found.direct, support=kept.support + found.support
        )
    return merged


class AgentState(TypedDict, total=False):
    """What flows between the nodes; each node returns a partial update of it."""

    question: str  # as it stands alone (`plan` resolves a follow-up against the turns)
    original: str  # as the user asked it
    turns: Annotated[list[dict[str, Any]], remember]  # the thread's earlier turns (memory)
    max_rounds: int  # copied from the context by `plan`, so the routers stay pure
    aspects: list[str]
    terms: dict[str, list[str]]  # aspect -> its key terms, for the offline judge and refiner
    round: int  # the round in progress, 1-based; `refine` opens the next one
    queries: list[Query]  # the queries of the round in progress
    asked: Annotated[list[str], operator.add]
    evidence: Annotated[dict[int, Evidence], keep_best_evidence]
    sufficient: bool
    covered: list[str]
    missing: list[str]
    gaps: dict[str, list[str]]  # missing aspect -> the key terms the evidence lacks
    merged: list[Hit]
    answer: Any  # a `core.answer.Answer` (typed loosely: LangGraph resolves the hints)
    again: bool  # the answer found nothing though the judge said sufficient: refine once more


class AskInput(TypedDict):
    """What a host (LangGraph Studio) sends a run: the question. The knowledge bases and the
    rounds are the run's options (its context), not its input."""

    question: str


class AskOutput(TypedDict, total=False):
    """What a host gets back: the answer (with its citations) and the evidence it rests on."""

    answer: Answer  # its text, whether it was found, its citations
    merged: list[Hit]  # the merged evidence, best first
