"""The store contract suite, part 2: users (with members, failed logins, preferences and the audit
log), runs with their conversations, and notebooks, on every implementation in
tests/store_homes.py (`HOMES`), on a real home in tmp_path."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.store_homes import HOMES, Home, open_home
from zhixing.core.choices import CellMode
from zhixing.core.errors import NotFoundError
from zhixing.core.models import CellResult


@pytest.fixture(params=sorted(HOMES))
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Home]:
    yield from open_home(request, tmp_path)


# --- users -------------------------------------------------------------------------------------


def test_a_user_put_reads_back_and_a_second_put_changes_role_and_password(home: Home) -> None:
    home.users.put("bob", "viewer", "scrypt$1")
    home.users.put("ann", "editor", "")
    first = home.users.get("bob")
    assert first is not None and (first.role, first.password_hash) == ("viewer", "scrypt$1")
    home.users.put("bob", "admin", "scrypt$2")
    again = home.users.get("bob")
    assert again is not None and (again.role, again.password_hash) == ("admin", "scrypt$2")
    assert again.created_at == first.created_at  # the same user, changed
    assert [u.name for u in home.users.all()] == ["ann", "bob"]
    assert home.users.get("carl") is None
    assert home.users.count() == 2 and home.users.count(with_password=True) == 1


def test_removing_a_user_keeps_a_knowledge_base_they_were_the_only_member_of_restricted(
    home: Home,
) -> None:
    alone, shared = home.catalog.create_kb("alone"), home.catalog.create_kb("shared")
    home.users.put("bob", "viewer", "")
    home.users.set_members(alone.id, ["bob"])
    home.users.set_members(shared.id, ["bob", "ann"])
    assert home.users.remove("bob") is True and home.users.remove("bob") is False
    assert home.users.get("bob") is None
    assert home.users.members(alone.id) == ["bob"]  # still restricted: to admins now
    assert home.users.members(shared.id) == ["ann"]


def test_a_token_is_kept_by_its_digest_listed_revoked_and_goes_with_its_user(home: Home) -> None:
    home.users.put("bob", "viewer", "")
    first = home.users.add_token("bob", "d1", 2000.0)
    second = home.users.add_token("bob", "d2", 3000.0)
    assert (first.user, first.digest, first.expires_at) == ("bob", "d1", 2000.0)
    assert home.users.token("d2") == second and home.users.token("nope") is None
    assert [t.id for t in home.users.tokens()] == [first.id, second.id]
    assert home.users.tokens(token_id=second.id) == [second]
    assert home.users.revoke_token(first.id) is True and home.users.revoke_token(first.id) is False
    assert home.users.token("d1") is None
    home.users.remove("bob")
    assert home.users.tokens() == []


def test_a_token_keeps_its_label_its_last_use_and_lists_by_its_user(home: Home) -> None:
    home.users.put("bob", "viewer", "")
    home.users.put("ann", "viewer", "")
    bobs = home.users.add_token("bob", "d1", 2000.0, "Claude Code")
    anns = home.users.add_token("ann", "d2", 3000.0)
    assert (bobs.label, bobs.last_used_at, anns.label) == ("Claude Code", None, "")
    assert home.users.tokens(user="bob") == [bobs] and home.users.tokens(user="carl") == []
    home.users.token_used(bobs.id, 1500.5)
    assert home.users.token("d1") == replace(bobs, last_used_at=1500.5)
    assert home.users.tokens(user="ann") == [anns]  # another token untouched
    reopened = home.reopen()
    try:
        assert reopened.users.tokens(token_id=bobs.id)[0].last_used_at == 1500.5
    finally:
        reopened.close()


def test_members_are_set_whole_sorted_and_without_repeats(home: Home) -> None:
    kb, other, open_kb = (home.catalog.create_kb(n) for n in ("kb", "other", "open"))
    home.users.set_members(kb.id, ["zoe", "ann", "zoe"])
    home.users.set_members(other.id, ["ann"])
    assert home.users.members(kb.id) == ["ann", "zoe"] and home.users.members(open_kb.id) == []
    assert home.users.restricted() == {kb.id: {"ann", "zoe"}, other.id: {"ann"}}
    home.users.set_members(kb.id, [])
    assert home.users.members(kb.id) == [] and home.users.restricted() == {other.id: {"ann"}}


def test_a_preference_is_kept_per_user_and_replaced(home: Home) -> None:
    assert home.users.preference("ann", "lang") is None
    home.users.set_preference("ann", "lang", "zh")
    home.users.set_preference("bob", "lang", "en")
    home.users.set_preference("ann", "lang", "en")
    assert home.users.preference("ann", "lang") == "en" == home.users.preference("bob", "lang")
    assert home.users.preference("ann", "theme") is None


def test_failed_logins_are_counted_by_name_by_client_or_both_and_cleared(home: Home) -> None:
    start = time.time() - 1
    home.users.record_failure("ann", "10.0.0.1")
    home.users.record_failure("ann", "10.0.0.2")
    home.users.record_failure("bob", "10.0.0.1")
    assert len(home.users.failures_since(start, name="ann")) == 2
    assert len(home.users.failures_since(start, client="10.0.0.1")) == 2
    assert len(home.users.failures_since(start, name="ann", client="10.0.0.2")) == 1
    assert home.users.failures_since(time.time() + 60, name="ann") == []
    times = home.users.failures_since(start, name="ann")
    assert times == sorted(times)
    with pytest.raises(ValueError):
        home.users.failures_since(start)
    home.users.clear_failures("ann", "10.0.0.1")
    assert len(home.users.failures_since(start, name="ann")) == 1
    home.users.clear_failures("ann")
    assert home.users.failures_since(start, name="ann") == []
    assert len(home.users.failures_since(start, name="bob")) == 1


def test_the_audit_log_reads_newest_first_with_its_details(home: Home) -> None:
    home.users.audit("ann", "kb.create", "kb", {"mode": "graph"})
    home.users.audit("bob", "kb.delete", "kb")
    log = home.users.audit_log()
    assert [(e.user, e.action, e.target) for e in log] == [
        ("bob", "kb.delete", "kb"),
        ("ann", "kb.create", "kb"),
    ]
    assert log[1].detail == {"mode": "graph"} and log[0].detail == {}
    assert [e.action for e in home.users.audit_log(limit=1)] == ["kb.delete"]


# --- runs and conversations --------------------------------------------------------------------


def test_a_saved_run_reads_back_with_its_json_decoded(home: Home) -> None:
    run = home.runs.save(
        "问题", ["a", "b"], {"text": "答"}, [{"kind": "hit"}], started_at=1.0, kind="task"
    )
    got = home.runs.get(run)
    assert (got.question, got.kbs, got.answer, got.trace) == (
        "问题",
        ("a", "b"),
        {"text": "答"},
        [{"kind": "hit"}],
    )
    assert (got.owner, got.kind, got.conversation) == ("local", "task", None)
    assert got.started_at == 1.0 and got.finished_at is not None
    with pytest.raises(NotFoundError):
        home.runs.get(run + 1)


def test_recent_runs_are_newest_first_and_filtered_by_owner(home: Home) -> None:
    ids = [
        home.runs.save(f"q{i}", [], {}, [], started_at=float(i), owner=owner)
        for i, owner in enumerate(["ann", "bob", "ann"])
    ]
    assert [r.id for r in home.runs.recent()] == ids[::-1]
    assert [r.id for r in home.runs.recent(owner="ann")] == [ids[2], ids[0]]
    assert [r.id for r in home.runs.recent(1)] == [ids[2]]


def test_a_conversation_belongs_to_its_owner_is_named_by_its_first_question_and_counts_turns(
    home: Home,
) -> None:
    older = home.runs.new_conversation("ann", "kept title")
    chat = home.runs.new_conversation("ann")
    assert chat.title == "" and chat.turns == 0
    for i in range(3):
        home.runs.save(
            f"question {i}", [], {}, [], started_at=float(i), owner="ann", conversation=chat.id
        )
    got = home.runs.conversation(chat.id, "ann")
    assert (got.title, got.turns) == ("question 0", 3)
    assert [c.id for c in home.runs.conversations("ann")] == [chat.id, older.id]  # latest first
    assert [c.id for c in home.runs.conversations("ann", limit=1)] == [chat.id]
    assert home.runs.conversations("bob") == []
    with pytest.raises(NotFoundError):
        home.runs.conversation(chat.id, "bob")  # another user's reads as missing
    assert [t.question for t in home.runs.turns(chat.id)] == [f"question {i}" for i in range(3)]
    assert [t.question for t in home.runs.turns(chat.id, limit=2)] == [
        "question 1",
        "question 2",
    ]


# --- notebooks ---------------------------------------------------------------------------------


def _cell_in(home: Home, owner: str = "ann", question: str = "q") -> tuple[str, str]:
    notebook = home.notebooks.notebook_for(owner, ["kb"])
    cell = home.notebooks.add_cell(
        notebook.id, owner, question, mode=CellMode.SEARCH, strategies=["bm25"], top_k=5
    )
    return notebook.id, cell.id


def test_one_owner_and_scope_is_one_notebook(home: Home) -> None:
    first = home.notebooks.notebook_for("ann", ["b", "a", "b"])
    assert first.kbs == ("a", "b") and first.cells == ()
    assert home.notebooks.notebook_for("ann", ["a", "b"]).id == first.id
    assert home.notebooks.notebook_for("ann", []).id != first.id
    assert home.notebooks.notebook_for("bob", ["a", "b"]).id != first.id
    assert home.notebooks.notebook(first.id, "ann").id == first.id
    with pytest.raises(NotFoundError):
        home.notebooks.notebook(first.id, "bob")


def test_cells_are_appended_in_order_and_read_back(home: Home) -> None:
    notebook_id, first = _cell_in(home, question="one")
    result = CellResult(answer={"text": "a"}, ran_at=2.0, seconds=0.5, kbs=("kb",))
    second = home.notebooks.add_cell(
        notebook_id, "ann", "two", mode=CellMode.ANSWER, strategies=[], top_k=3, result=result
    )
    cells = home.notebooks.notebook(notebook_id, "ann").cells
    assert [(c.id, c.question, c.position) for c in cells] == [
        (first, "one", 0),
        (second.id, "two", 1),
    ]
    cell = home.notebooks.cell(first, "ann")
    assert (cell.mode, cell.strategies, cell.top_k, cell.result) == (
        CellMode.SEARCH,
        ("bm25",),
        5,
        None,
    )
    assert second.result == result and second.mode == CellMode.ANSWER
    with pytest.raises(NotFoundError):
        home.notebooks.add_cell(
            notebook_id, "bob", "x", mode=CellMode.SEARCH, strategies=[], top_k=1
        )


def test_a_cell_is_updated_field_by_field_and_refuses_an_unknown_field(home: Home) -> None:
    _, cell_id = _cell_in(home)
    result = CellResult(answer={"text": "b"}, ran_at=1.0)
    cell = home.notebooks.update_cell(
        cell_id, "ann", question="new", top_k=9, collapsed=True, result=result, error="late"
    )
    assert (cell.question, cell.top_k, cell.collapsed, cell.result, cell.error) == (
        "new",
        9,
        True,
        result,
        "late",
    )
    assert home.notebooks.cell(cell_id, "ann") == cell
    with pytest.raises(ValueError, match="no field 'colour'"):
        home.notebooks.update_cell(cell_id, "ann", colour="red")
    with pytest.raises(NotFoundError):
        home.notebooks.update_cell(cell_id, "bob", question="theirs")


def test_cells_move_within_their_notebook_stopping_at_either_end(home: Home) -> None:
    notebook_id, a = _cell_in(home, question="a")
    _, b = _cell_in(home, question="b")
    _, c = _cell_in(home, question="c")

    def order() -> list[str]:
        return [cell.question for cell in home.notebooks.notebook(notebook_id, "ann").cells]

    home.notebooks.move_cell(c, "ann", -1)
    assert order() == ["a", "c", "b"]
    home.notebooks.move_cell(a, "ann", 5)
    assert order() == ["c", "b", "a"]
    home.notebooks.move_cell(c, "ann", -5)
    assert order() == ["c", "b", "a"]
    with pytest.raises(NotFoundError):
        home.notebooks.move_cell(b, "bob", 1)


def test_a_deleted_cell_is_gone_and_another_owners_cell_reads_as_missing(home: Home) -> None:
    notebook_id, mine = _cell_in(home, question="a")
    _, kept = _cell_in(home, question="b")
    _, theirs = _cell_in(home, owner="bob")
    with pytest.raises(NotFoundError):
        home.notebooks.cell(theirs, "ann")
    with pytest.raises(NotFoundError):
        home.notebooks.delete_cell(theirs, "ann")
    home.notebooks.delete_cell(mine, "ann")
    with pytest.raises(NotFoundError):
        home.notebooks.cell(mine, "ann")
    assert [c.id for c in home.notebooks.notebook(notebook_id, "ann").cells] == [kept]
    assert home.notebooks.cell(theirs, "bob").id == theirs
