"""The agentic loop's runtime context: the dependencies and settings every node reaches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError
from ..models import Hit
from ..search.rewrite import QueryRewrites

if TYPE_CHECKING:
    from ..llm.protocol import LLM

__all__ = ["MAX_ROUNDS_RANGE", "AgentContext", "AnswerLike"]

MAX_ROUNDS_RANGE = (1, 5)


class AnswerLike(Protocol):
    """What the loop needs of an answer (`core.answer.Answer` is one)."""

    @property
    def found(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class AgentContext:
    """The dependencies of one agentic run, passed as LangGraph's runtime context.

    `retrieve` maps queries, with the rewrites the LLM wrote for them (None: use the rules, never
    a call of its own), to their fused hits (one list per query, each `Hit.strategies` giving
    the rank every strategy gave it); `answer` writes the final answer from the merged evidence.
    Without `llm` the loop runs offline: the judge checks aspect-term coverage and the refiner
    queries uncovered terms and the `neighbours` (related entity names) of those terms.
    `evidence_per_round` is how many of each query's top hits a round keeps as evidence, and how
    many per aspect `merge` passes on to the answer. On a conversation's thread, `kbs` and
    `visible` decide which earlier turns the plan may lean on (core/agents/memory.py).
    """

    retrieve: Callable[[list[str], list[QueryRewrites | None]], list[list[Hit]]]
    answer: Callable[[str, Sequence[Hit], Sequence[str]], AnswerLike]
    # `answer`, handing the text so far to its last argument as the model writes it; None:
    # the answer arrives whole (offline, or a caller that shows no live answer).
    answer_stream: (
        Callable[[str, Sequence[Hit], Sequence[str], Callable[[str], None]], AnswerLike] | None
    ) = None
    llm: LLM | None = None
    neighbours: Callable[[Sequence[str]], list[str]] | None = None
    max_rounds: int = 3
    evidence_per_round: int = 10
    kbs: Sequence[str] = ()  # the knowledge bases searched, recorded with the turn
    # The knowledge bases the user may read now: earlier turns that cited others are not used.
    visible: Sequence[str] | None = None

    def __post_init__(self) -> None:
        low, high = MAX_ROUNDS_RANGE
        if not low <= self.max_rounds <= high:
            raise ConfigError(
                f"max_rounds must be between {low} and {high} (3 to 5 is recommended);"
                f" got {self.max_rounds}."
            )
        if self.evidence_per_round < 1:
            raise ConfigError(
                f"evidence_per_round must be at least 1; got {self.evidence_per_round}."
            )
