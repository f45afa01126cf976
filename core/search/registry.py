"""The search strategies by name (docs/architecture.md §5): a strategy is a function from a
batch of queries to ranked chunk ids, registered once with what it needs; the engine schedules
every registered one the same way, so a new strategy is one function and one `register` call
in any module, with no change to the engine.

`basic` (dense search of the query itself) and `keyword` (BM25, which also links documents by
title and gives the fusion its signal) are the engine's own: every other strategy may lean on
`basic`'s list, and `keyword`'s signal weighs the fusion. The rest register here: `hyde`,
`split`, `generalize` and `graph` (core/search/strategies.py), and any a team adds.

A strategy that `needs` "rewrites" runs once the query rewrites are written (by the model, or
by the rules); one that needs "basic" once `basic`'s list is in; one that needs neither starts
at once. Each runs on the engine's pool, beside the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..choices import Strategy
from ..errors import ZhixingError

if TYPE_CHECKING:
    import numpy as np

    from .rewrite import QueryRewrites
    from .strategies import StrategyRunner

__all__ = [
    "Need",
    "RegisteredStrategy",
    "StrategyInput",
    "parse_strategies",
    "register",
    "registered",
    "strategy_names",
    "unregister",
]

Need = Literal["rewrites", "basic"]
Ranked = list[list[int]]  # per query, chunk ids best first
# The engine's own two, which every search can run without a registration.
ENGINE_STRATEGIES = (Strategy.BASIC.value, Strategy.KEYWORD.value)


@dataclass(frozen=True)
class StrategyInput:
    """What a strategy gets for one batch: the queries, their embeddings, the runner over the
    stores in scope, and, when it asked for them, the rewrites and `basic`'s lists."""

    runner: StrategyRunner
    queries: list[str]
    vectors: np.ndarray
    rewrites: Sequence[QueryRewrites] = ()
    basic: Ranked | None = None


@dataclass(frozen=True)
class RegisteredStrategy:
    name: str
    run: Callable[[StrategyInput], Ranked]
    needs: frozenset[Need]


_REGISTRY: dict[str, RegisteredStrategy] = {}


def register(
    name: str, *, needs: Iterable[Need] = ()
) -> Callable[[Callable[[StrategyInput], Ranked]], Callable[[StrategyInput], Ranked]]:
    """Register a strategy under `name` (lower case, unique): `@register("mine", needs=...)`."""
    key = name.strip().casefold()
    if not key or key in ENGINE_STRATEGIES or key in _REGISTRY:
        raise ValueError(f"A search strategy is already named {name!r}, or the name is empty.")

    def add(run: Callable[[StrategyInput], Ranked]) -> Callable[[StrategyInput], Ranked]:
        _REGISTRY[key] = RegisteredStrategy(key, run, frozenset(needs))
        return run

    return add


def unregister(name: str) -> None:
    """Take a registered strategy away (a test's own, once it is done)."""
    _REGISTRY.pop(name.strip().casefold(), None)


def registered(names: Iterable[str]) -> list[RegisteredStrategy]:
    """The registered strategies among `names`, in their order (the engine's own left out)."""
    return [_REGISTRY[n] for n in names if n in _REGISTRY]


def strategy_names() -> tuple[str, ...]:
    """Every strategy a search may run: the six of `Strategy`, then any other registered."""
    builtin = tuple(s.value for s in Strategy)
    return builtin + tuple(n for n in _REGISTRY if n not in builtin)


def parse_strategies(value: str | Sequence[str]) -> tuple[str, ...]:
    """Validate a strategy list ("basic,keyword"); the error lists the valid names."""
    given = [s.strip() for s in (value.split(",") if isinstance(value, str) else value)]
    given = [n for n in given if n]
    valid = strategy_names()
    if not given:
        raise ZhixingError(f"No search strategy was given; use one or more of {', '.join(valid)}.")
    for name in given:
        if name.casefold() not in valid:
            raise ZhixingError(
                f"Unknown search strategy {name!r}; valid strategies: {', '.join(valid)}."
            )
    return tuple(dict.fromkeys(n.casefold() for n in given))
