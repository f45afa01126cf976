"""Reciprocal Rank Fusion (DESIGN §5)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["RRF_K", "Fused", "reciprocal_rank_fusion"]

RRF_K = 60
T = TypeVar("T", bound=Hashable)


@dataclass
class Fused(Generic[T]):
    item: T
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(ranked: Mapping[str, Sequence[T]], *, k: int = RRF_K) -> list[Fused[T]]:
    """Fuse ranked lists into one: score(d) = Σ over lists of 1 / (k + rank(d)).

    Ranks are 1-based, as in Cormack et al. (2009): the top item of a list adds 1/(k+1), not 1/k.
    An item listed twice in one list counts once, at its best rank. Ties keep the order in which
    items were first seen, strategy by strategy, so the result is deterministic.
    """
    fused: dict[T, Fused[T]] = {}
    for strategy, items in ranked.items():
        for rank, item in enumerate(items, start=1):
            entry = fused.setdefault(item, Fused(item))
            if strategy in entry.ranks:
                continue
            entry.ranks[strategy] = rank
            entry.score += 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(fused)}
    return sorted(fused.values(), key=lambda f: (-f.score, order[f.item]))
