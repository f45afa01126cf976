"""A seventh search strategy is one function and one `register` call, here in a test module,
with no change to core/search (issue 35): the engine schedules it beside the others, the
fusion ranks by it, and every hit says the rank it gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import built_home
from zhixing.core.config import Settings
from zhixing.core.errors import ZhixingError
from zhixing.core.search.registry import (
    StrategyInput,
    parse_strategies,
    register,
    strategy_names,
    unregister,
)
from zhixing.core.service import KnowledgeService

DOCS = {
    "sessions.md": "# Sessions\n\nIdle sessions expire after 15 minutes.\n",
    "tokens.md": "# Tokens\n\nAPI tokens are rotated every 90 days.\n",
    "backups.md": "# Backups\n\nBackups are encrypted with AES-256.\n",
}
seen: list[StrategyInput] = []


@pytest.fixture
def reverse():
    """`reverse` ranks `basic`'s list backwards: it needs the rewrites and `basic`'s lists."""

    @register("reverse", needs=("rewrites", "basic"))
    def _reverse(batch: StrategyInput) -> list[list[int]]:
        seen.append(batch)
        return [list(reversed(ranked)) for ranked in batch.basic or []]

    yield "reverse"
    unregister("reverse")
    seen.clear()


def test_a_strategy_registered_outside_core_runs_in_the_fused_search(
    tmp_path: Path, embedder, reverse: str
) -> None:  # noqa: ANN001
    home = built_home(tmp_path, embedder, "kb", DOCS)
    assert reverse in strategy_names() and parse_strategies("basic, Reverse") == (
        "basic",
        reverse,
    )
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        plain = svc.search.query(
            "How long until idle sessions expire?", ["kb"], strategies=["basic"]
        )
        hits = svc.search.query(
            "How long until idle sessions expire?", ["kb"], strategies=["basic", reverse]
        )
    assert len(seen) == 1 and seen[0].basic is not None and len(seen[0].rewrites) == 1
    by_basic = [h.chunk_id for h in plain]
    assert {h.chunk_id for h in hits} == set(by_basic)
    for hit in hits:  # each hit carries the rank the new strategy gave it
        assert hit.strategies[reverse] == len(by_basic) - by_basic.index(hit.chunk_id)


def test_an_unknown_or_taken_strategy_name_is_refused(reverse: str) -> None:
    with pytest.raises(ZhixingError, match="Unknown search strategy 'nope'; valid strategies"):
        parse_strategies("basic,nope")
    with pytest.raises(ValueError, match="already named"):
        register("keyword")(lambda batch: [])
    with pytest.raises(ValueError, match="already named"):
        register(reverse)(lambda batch: [])
