"""Notebooks through the service: cells that persist per user and scope, run by their mode,
edit and re-run in place, move, collapse, delete, and go to Markdown and back.

Real Milvus Lite and SQLite in temp dirs, the built-in embedder, no LLM.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

# The same two small knowledge bases as the conversations' tests ("rules" and "finance").
from tests import test_conversations as conversations  # noqa: E402
from zhixing.core.choices import CellMode
from zhixing.core.config import Settings
from zhixing.core.errors import NotFoundError, ZhixingError
from zhixing.core.notebook import parse_notebook
from zhixing.core.service import KnowledgeService

ALICE, BOB = conversations.ALICE, conversations.BOB
home = conversations.home  # the fixture itself


@pytest.fixture
def svc(home: Path, embedder) -> KnowledgeService:  # noqa: ANN001
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        yield service


def test_cells_run_by_their_mode_and_persist_across_a_restart(home, embedder) -> None:  # noqa: ANN001
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        book = svc.notebooks.for_kbs(["rules"])
        search = svc.notebooks.add_cell(book.id, "level 3 password length", mode="search")
        answer = svc.notebooks.add_cell(book.id, "How long is a level 2 password?", mode="answer")
        agentic = svc.notebooks.add_cell(book.id, "What does level 3 sign-in need?", mode="agentic")
        assert search.result is None  # added, not run
        ran = [svc.notebooks.run_cell(c.id) for c in (search, answer, agentic)]
        assert ran[0].hits and ran[0].result is not None and ran[0].result.answer is None
        assert "12 characters" in ran[1].result.answer["answer"]
        assert [e["node"] for e in ran[2].result.events][0] == "plan"
        assert "hardware key" in ran[2].result.answer["answer"]
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        again = svc.notebooks.for_kbs(["rules"])
        assert again.id == book.id
        assert [c.question for c in again.cells] == [c.question for c in ran]
        assert [c.mode for c in again.cells] == [CellMode.SEARCH, CellMode.ANSWER, CellMode.AGENTIC]
        assert again.cells[0].hits[0].document == "levels.md"


def test_a_notebook_belongs_to_one_user_and_one_set_of_knowledge_bases(svc) -> None:  # noqa: ANN001
    alice, bob = svc.as_user(ALICE), svc.as_user(BOB)
    mine = alice.notebooks.for_kbs(["rules"])
    cell = alice.notebooks.add_cell(mine.id, "bcrypt")
    assert alice.notebooks.for_kbs(["rules"]).id == mine.id
    assert alice.notebooks.for_kbs(["rules", "finance"]).id != mine.id
    assert alice.notebooks.for_kbs(None).id == alice.notebooks.for_kbs(["@all"]).id != mine.id
    assert (
        bob.notebooks.for_kbs(["rules"]).id != mine.id
        and not bob.notebooks.for_kbs(["rules"]).cells
    )
    for attempt in (
        lambda: bob.notebooks.open(mine.id),
        lambda: bob.notebooks.add_cell(mine.id, "steal"),
        lambda: bob.notebooks.run_cell(cell.id),
        lambda: bob.notebooks.edit_cell(cell.id, question="changed"),
        lambda: bob.notebooks.delete_cell(cell.id),
        lambda: bob.notebooks.export(mine.id),
    ):
        with pytest.raises(NotFoundError):
            attempt()
    assert [c.question for c in alice.notebooks.open(mine.id).cells] == ["bcrypt"]


def test_an_edited_cell_re_runs_in_place_and_keeps_its_position(svc) -> None:  # noqa: ANN001
    book = svc.notebooks.for_kbs(["rules"])
    first = svc.notebooks.add_cell(book.id, "How long is a level 2 password?")
    second = svc.notebooks.add_cell(book.id, "audit records")
    svc.notebooks.run_cell(first.id)
    edited = svc.notebooks.edit_cell(first.id, question="What does level 3 sign-in need?")
    assert edited.result is not None  # the old result stays until it runs again
    rerun = svc.notebooks.run_cell(first.id)
    assert "hardware key" in rerun.result.answer["answer"]
    assert [c.id for c in svc.notebooks.open(book.id).cells] == [first.id, second.id]


def test_cells_move_collapse_and_delete(svc) -> None:  # noqa: ANN001
    book = svc.notebooks.for_kbs()
    a, b, c = (svc.notebooks.add_cell(book.id, q) for q in ("alpha", "beta", "gamma"))
    svc.notebooks.move_cell(c.id, -1)
    assert [x.question for x in svc.notebooks.open(book.id).cells] == ["alpha", "gamma", "beta"]
    svc.notebooks.move_cell(a.id, -1)  # already first: stays
    svc.notebooks.move_cell(a.id, 5)  # past the end: last
    assert [x.question for x in svc.notebooks.open(book.id).cells] == ["gamma", "beta", "alpha"]
    assert svc.notebooks.edit_cell(b.id, collapsed=True).collapsed
    svc.notebooks.delete_cell(b.id)
    assert [x.question for x in svc.notebooks.open(book.id).cells] == ["gamma", "alpha"]
    with pytest.raises(NotFoundError, match="no such cell"):
        svc.notebooks.run_cell(b.id)


def test_bad_cell_settings_are_refused_with_a_sentence_and_change_nothing(svc) -> None:  # noqa: ANN001
    book = svc.notebooks.for_kbs(["rules"])
    cell = svc.notebooks.add_cell(book.id, "bcrypt", mode="search")
    with pytest.raises(ZhixingError, match="question is empty"):
        svc.notebooks.add_cell(book.id, "   ")
    with pytest.raises(ZhixingError, match="valid cell modes: search, answer, agentic"):
        svc.notebooks.edit_cell(cell.id, mode="chat")
    with pytest.raises(ZhixingError, match="valid strategies"):
        svc.notebooks.add_cell(book.id, "x", strategies=["vector"])
    with pytest.raises(ZhixingError, match="top_k must be between 1 and 50"):
        svc.notebooks.edit_cell(cell.id, top_k=0)
    with pytest.raises(NotFoundError):
        svc.notebooks.for_kbs(["no-such-kb"])
    assert [(c.question, c.mode, c.top_k) for c in svc.notebooks.open(book.id).cells] == [
        ("bcrypt", CellMode.SEARCH, 10)
    ]


def test_a_failed_run_keeps_its_sentence_and_the_earlier_result(svc) -> None:  # noqa: ANN001
    book = svc.notebooks.for_kbs(["finance"])
    cell = svc.notebooks.run_cell(svc.notebooks.add_cell(book.id, "audit records kept").id)
    assert cell.result is not None and not cell.error and cell.result.kbs == ("finance",)
    svc.kbs.delete("finance")
    failed = svc.notebooks.run_cell(cell.id)
    assert "finance" in failed.error
    # The earlier result is kept, but withheld: the knowledge base it consulted is gone.
    assert failed.withheld and failed.result is None
    assert svc._home.notebooks.cell(cell.id, "local").result == cell.result


def test_a_notebook_exports_to_markdown_and_imports_back_with_its_answers(svc) -> None:  # noqa: ANN001
    book = svc.notebooks.for_kbs(["rules"])
    asked = svc.notebooks.run_cell(
        svc.notebooks.add_cell(book.id, "How long is a level 2 password?").id
    )
    svc.notebooks.run_cell(svc.notebooks.add_cell(book.id, "level 3", mode="search", top_k=3).id)
    svc.notebooks.add_cell(book.id, "## not run -- yet", mode="agentic")
    text = svc.notebooks.export(book.id)
    assert "## How long is a level 2 password?" in text and "[1]" in text
    assert "levels.md" in text  # the sources, readable in any Markdown viewer
    other = svc.as_user(ALICE).notebooks.for_kbs(["rules"])
    imported = svc.as_user(ALICE).notebooks.import_cells(other.id, text)
    assert [(c.question, c.mode, c.top_k) for c in imported.cells] == [
        ("How long is a level 2 password?", CellMode.ANSWER, 10),
        ("level 3", CellMode.SEARCH, 3),
        ("## not run -- yet", CellMode.AGENTIC, 10),
    ]
    restored = imported.cells[0].result.answer
    assert restored["answer"] == asked.result.answer["answer"]
    fields = ("n", "chunk_id", "document", "page", "text")  # the chunk itself is not exported
    assert restored["citations"] == [
        {k: c[k] for k in fields} for c in asked.result.answer["citations"]
    ]
    assert imported.cells[2].result is None


def test_a_hand_written_file_imports_and_a_file_without_cells_is_refused(svc) -> None:  # noqa: ANN001
    book = svc.notebooks.for_kbs(["rules"])
    svc.notebooks.add_cell(book.id, "kept")
    drafts = parse_notebook(
        "# My questions\n\n## bcrypt cost\n\nnotes\n\n```\n## code\n```\n## audit\n"
    )
    assert [d.question for d in drafts] == ["bcrypt cost", "audit"]
    assert all(d.mode == CellMode.ANSWER and d.answer is None for d in drafts)
    for bad in ("just some prose", "", "<!-- zhixing-cell {} -->"):
        with pytest.raises(ZhixingError, match="no cells"):
            svc.notebooks.import_cells(book.id, bad)
    broken = '## q\n<!-- zhixing-cell {not json -->\n\n## r\n<!-- zhixing-cell {"mode": 3} -->\n'
    assert [(d.question, d.mode) for d in parse_notebook(broken)] == [
        ("q", CellMode.ANSWER),
        ("r", CellMode.ANSWER),
    ]
    assert [c.question for c in svc.notebooks.open(book.id).cells] == ["kept"]


def test_a_notebook_withholds_the_cells_of_a_knowledge_base_its_owner_lost(svc) -> None:  # noqa: ANN001
    svc.kbs.restrict("finance", ["alice"])
    alice = svc.as_user(ALICE)
    everything = alice.notebooks.for_kbs(
        None
    )  # @all: rules and finance, as alice could see them then
    asked = [
        alice.notebooks.run_cell(
            alice.notebooks.add_cell(everything.id, "audit records payment", mode=mode).id
        )
        for mode in ("search", "answer", "agentic")
    ]
    assert all("seven years" in str(c.result) for c in asked)  # her hits came from finance
    rules_only = alice.notebooks.for_kbs(["rules"])
    kept = alice.notebooks.run_cell(
        alice.notebooks.add_cell(rules_only.id, "level 2 password", mode="search").id
    )
    lost = alice.notebooks.for_kbs(["finance"])
    scoped = alice.notebooks.run_cell(
        alice.notebooks.add_cell(lost.id, "audit records kept", mode="answer").id
    )
    assert "seven years" in str(scoped.result)

    svc.kbs.restrict("finance", ["bob"])  # alice is no longer a member

    assert all(c.withheld for c in alice.notebooks.for_kbs(None).cells)  # as the page opens it
    for book in (everything, lost):
        cells = alice.notebooks.open(book.id).cells
        assert all(c.withheld and c.result is None and not c.hits for c in cells)
        assert "seven years" not in str(cells) and "audit.md" not in str(cells)
        exported = alice.notebooks.export(book.id)
        assert "seven years" not in exported and "audit.md" not in exported
    # Every door that hands a cell back withholds it: edit, fold, and a run that fails.
    edited = alice.notebooks.edit_cell(asked[1].id, collapsed=True)
    assert edited.withheld and edited.result is None
    failed = alice.notebooks.run_cell(
        scoped.id
    )  # its scope is gone: the same sentence as a missing one
    assert failed.withheld and failed.result is None and "seven years" not in str(failed)
    assert "no knowledge base named 'finance' that alice may see (known: rules)" in failed.error
    # A cell over what she still sees is untouched, and a re-run shows what she sees now.
    assert alice.notebooks.open(rules_only.id).cells[0].result == kept.result
    rerun = alice.notebooks.run_cell(asked[0].id)
    assert not rerun.withheld and rerun.result.kbs == ("rules",)
    assert {h.kb for h in rerun.hits} <= {"rules"} and "seven years" not in str(rerun.result)
    # Given back, the cells show again: withholding hides, it does not delete.
    svc.kbs.restrict("finance", ["alice", "bob"])
    shown = alice.notebooks.open(everything.id).cells
    assert not shown[1].withheld and "seven years" in str(shown[1].result)


def test_a_cell_kept_before_runs_named_their_knowledge_bases_is_withheld_by_its_hits(svc) -> None:  # noqa: ANN001
    svc.kbs.restrict("finance", ["alice"])
    alice = svc.as_user(ALICE)
    book = alice.notebooks.for_kbs(None)
    cell = alice.notebooks.run_cell(
        alice.notebooks.add_cell(book.id, "audit records payment", mode="search").id
    )
    old = dataclasses.replace(cell.result, kbs=None)  # as an older Zhixing kept it: no "kbs"
    svc._home.notebooks.update_cell(cell.id, "alice", result=old)
    assert not alice.notebooks.open(book.id).cells[0].withheld
    svc.kbs.restrict("finance", ["bob"])
    withheld = alice.notebooks.open(book.id).cells[0]
    assert withheld.withheld and withheld.result is None
