"""The closed sets of names (core/choices.py): parsed forgivingly, refused with the valid names,
and stored as the plain strings they are."""

from __future__ import annotations

import json
import sqlite3

import pytest

from zhixing.core.choices import BuildMode, DocumentState, JobState, Strategy
from zhixing.core.errors import ZhixingError
from zhixing.core.search import parse_strategies


def test_a_name_parses_whatever_its_case_and_spaces():
    assert BuildMode.parse(" Graph ") is BuildMode.GRAPH
    assert Strategy.parse("KEYWORD") is Strategy.KEYWORD
    assert JobState.parse("interrupted") is JobState.INTERRUPTED


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (BuildMode, "Unknown build mode 'magic'; valid build modes: index, graph."),
        (Strategy, "valid strategies: basic, hyde, split, generalize, keyword, graph."),
        (JobState, "valid job states: running, paused, done, failed, cancelled, interrupted."),
    ],
)
def test_an_unknown_name_is_refused_with_the_valid_ones(kind, message):
    with pytest.raises(ZhixingError) as caught:
        kind.parse("magic")
    assert message in str(caught.value)


def test_a_member_is_its_string_in_comparisons_json_and_sqlite():
    assert JobState.RUNNING == "running" and {"running": 1}[JobState.RUNNING] == 1
    assert json.dumps({"state": JobState.PAUSED}) == '{"state": "paused"}'
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE t (s TEXT)")
        db.execute("INSERT INTO t VALUES (?)", (BuildMode.GRAPH,))
        assert db.execute("SELECT s, typeof(s) FROM t").fetchone() == ("graph", "text")
    assert [s for s in JobState if s.active] == [JobState.RUNNING, JobState.PAUSED]


def test_a_strategy_list_keeps_the_first_of_each_and_names_a_wrong_one():
    assert parse_strategies(" Keyword, basic,keyword ") == ("keyword", "basic")
    with pytest.raises(ZhixingError, match="Unknown search strategy 'vector'; valid strategies"):
        parse_strategies("basic,vector")


def test_every_document_state_the_catalog_writes_is_a_document_state(service, tmp_path):
    (tmp_path / "good.md").write_text("# Rule\n\nPasswords are hashed.\n", encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    service.kbs.create("kb")
    service.builds.add("kb", [tmp_path / "good.md", tmp_path / "broken.pdf"])
    states = {d.source: DocumentState.parse(d.status) for d in service.kbs.documents("kb")}
    assert states == {"good.md": DocumentState.INDEXED, "broken.pdf": DocumentState.FAILED}
