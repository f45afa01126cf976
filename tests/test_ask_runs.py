"""The run log on a real SQLite catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from zhixing.core.errors import NotFoundError
from zhixing.core.store.catalog import Catalog
from zhixing.core.store.runs import RunStore, StoredRun


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return Catalog(tmp_path / "catalog.db")


def test_a_saved_run_comes_back_with_its_json_decoded(catalog: Catalog) -> None:
    runs = RunStore(catalog.db)
    answer = {"answer": "用 bcrypt [1]", "found": True, "citations": [{"n": 1, "chunk_id": 7}]}
    trace = [{"node": "plan", "round": 1}, {"node": "answer", "round": 1, "found": True}]
    run_id = runs.save("密码怎么存？", ["asvs"], answer, trace, started_at=10.0, finished_at=12.5)
    assert runs.get(run_id) == StoredRun(
        id=run_id,
        kind="ask",
        question="密码怎么存？",
        kbs=("asvs",),
        answer=answer,
        trace=trace,
        started_at=10.0,
        finished_at=12.5,
        owner="local",  # the default: a run not asked by a signed-in user
        conversation=None,
    )


def test_runs_survive_reopening_and_list_newest_first(tmp_path: Path) -> None:
    first = RunStore(Catalog(tmp_path / "c.db").db)
    one = first.save("q1", [], {}, [], started_at=1.0)
    two = first.save("q2", ["a", "b"], {}, [], started_at=2.0)
    first.db.close()
    again = RunStore(Catalog(tmp_path / "c.db").db)
    assert [r.id for r in again.recent()] == [two, one]
    assert again.get(one).finished_at is not None


def test_an_unknown_run_is_a_not_found_error(catalog: Catalog) -> None:
    with pytest.raises(NotFoundError, match="no run 99"):
        RunStore(catalog.db).get(99)


def test_a_catalog_from_before_conversations_gains_the_columns_and_keeps_its_runs(tmp_path):
    """Runs stored before owners existed belong to the local operator after the upgrade."""
    catalog = Catalog(tmp_path / "c.db")
    with catalog.transaction():
        catalog.db.execute(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, question TEXT NOT NULL,"
            " kbs TEXT NOT NULL DEFAULT '[]', answer TEXT NOT NULL DEFAULT '{}',"
            " trace TEXT NOT NULL DEFAULT '[]', started_at REAL NOT NULL, finished_at REAL)"
        )
        catalog.db.execute("INSERT INTO runs (question, started_at) VALUES ('old', 1.0)")
    runs = RunStore(catalog.db)
    [old] = runs.recent(owner="local")
    assert (old.question, old.owner, old.conversation) == ("old", "local", None)
    assert runs.recent(owner="alice") == []


def test_conversations_belong_to_their_owner(catalog: Catalog) -> None:
    runs = RunStore(catalog.db)
    mine = runs.new_conversation("alice")
    runs.save("第一个问题", ["kb"], {}, [], started_at=1.0, owner="alice", conversation=mine.id)
    assert [(c.id, c.title, c.turns) for c in runs.conversations("alice")] == [
        (mine.id, "第一个问题", 1)
    ]
    assert runs.conversations("bob") == []
    with pytest.raises(NotFoundError, match="no such conversation"):
        runs.conversation(mine.id, "bob")  # another's reads as missing, not as forbidden
