"""The run log on a real SQLite catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import NotFoundError
from core.store.catalog import Catalog
from core.store.runs import RunStore


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return Catalog(tmp_path / "catalog.db")


def test_a_saved_run_comes_back_with_its_json_decoded(catalog: Catalog) -> None:
    runs = RunStore(catalog)
    answer = {"answer": "用 bcrypt [1]", "found": True, "citations": [{"n": 1, "chunk_id": 7}]}
    trace = [{"node": "plan", "round": 1}, {"node": "answer", "round": 1, "found": True}]
    run_id = runs.save("密码怎么存？", ["asvs"], answer, trace, started_at=10.0, finished_at=12.5)
    assert runs.get(run_id) == {
        "id": run_id,
        "question": "密码怎么存？",
        "kbs": ["asvs"],
        "answer": answer,
        "trace": trace,
        "started_at": 10.0,
        "finished_at": 12.5,
    }


def test_runs_survive_reopening_and_list_newest_first(tmp_path: Path) -> None:
    first = RunStore(Catalog(tmp_path / "c.db"))
    one = first.save("q1", [], {}, [], started_at=1.0)
    two = first.save("q2", ["a", "b"], {}, [], started_at=2.0)
    first.catalog.close()
    again = RunStore(Catalog(tmp_path / "c.db"))
    assert [r["id"] for r in again.recent()] == [two, one]
    assert again.get(one)["finished_at"] is not None


def test_an_unknown_run_is_a_not_found_error(catalog: Catalog) -> None:
    with pytest.raises(NotFoundError, match="no run 99"):
        RunStore(catalog).get(99)
