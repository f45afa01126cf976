"""The store contract suite, part 1: the catalog, build jobs, the LLM cache, and what crosses
stores (a knowledge base deleted with everything of it, one dumped and loaded whole).

Each test runs on every implementation in tests/store_homes.py (`HOMES`) on a real home in
tmp_path, as Haystack runs one suite on every DocumentStore; part 2 (test_store_contracts_people.py)
covers users, runs and notebooks, part 3 (test_store_contracts_graph.py) the graph.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.store_homes import HOMES, Home, open_home
from zhixing.core.choices import BuildMode, DocumentState, JobState
from zhixing.core.errors import BuildBusyError, NotFoundError, ParseError, StoreError
from zhixing.core.models import Chunk, KnowledgeBase
from zhixing.core.store.kb_rows import dump_kb, load_kb


@pytest.fixture(params=sorted(HOMES))
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Home]:
    yield from open_home(request, tmp_path)


def _chunks(n: int, heading: tuple[str, ...] = ("H",)) -> list[Chunk]:
    return [
        Chunk(ordinal=i, text=f"text {i}", heading_path=heading, line_start=i + 1, line_end=i + 1)
        for i in range(n)
    ]


def _document(home: Home, kb: KnowledgeBase, source: str, chunks: int = 2) -> tuple[int, list[int]]:
    return home.catalog.add_document(
        kb.id,
        source=source,
        sha256=f"sha-{source}",
        kind="md",
        title=f"Title {source}",
        pages=1,
        chunks=_chunks(chunks),
    )


# --- knowledge bases ---------------------------------------------------------------------------


def test_a_created_knowledge_base_reads_back_by_name_and_by_id(home: Home) -> None:
    kb = home.catalog.create_kb(
        "  法规 ",
        mode="graph",
        tags=["law", "中文"],
        description="rules",
        embedding="e5-small",
        dimension=384,
        created_by="ed",
    )
    assert kb.name == "法规" and kb.mode == BuildMode.GRAPH and kb.tags == ("law", "中文")
    assert (kb.description, kb.embedding, kb.dimension) == ("rules", "e5-small", 384)
    assert home.catalog.get_kb("法规") == home.catalog.find_kb("法规") == kb
    assert home.catalog.kb_by_id(kb.id) == kb
    assert home.catalog.kb_origin(kb.id) == ("ed", False)


def test_knowledge_bases_list_by_name(home: Home) -> None:
    for name in ("b", "c", "a"):
        home.catalog.create_kb(name)
    assert [kb.name for kb in home.catalog.list_kbs()] == ["a", "b", "c"]


def test_a_missing_knowledge_base_is_none_or_not_found(home: Home) -> None:
    assert home.catalog.find_kb("nope") is None
    with pytest.raises(NotFoundError, match="no knowledge base named 'nope'"):
        home.catalog.get_kb("nope")
    with pytest.raises(NotFoundError):
        home.catalog.kb_by_id(99)
    with pytest.raises(NotFoundError):
        home.catalog.kb_origin(99)


def test_a_taken_or_malformed_name_or_an_unknown_mode_is_refused(home: Home) -> None:
    home.catalog.create_kb("kb")
    with pytest.raises(StoreError, match="already exists"):
        home.catalog.create_kb("kb")
    for bad in ("", "@kb", "a/b", "x" * 65):
        with pytest.raises(StoreError, match="needs a name"):
            home.catalog.create_kb(bad)
    with pytest.raises(StoreError):
        home.catalog.create_kb("other", mode="nonsense")
    assert [kb.name for kb in home.catalog.list_kbs()] == ["kb"]


def test_a_knowledge_base_is_filled_by_its_first_document_but_not_by_a_failed_one(
    home: Home,
) -> None:
    kb = home.catalog.create_kb("kb", created_by="ed")
    home.catalog.record_failure(kb.id, source="bad.pdf", sha256="x", kind="pdf", error="broken")
    assert home.catalog.kb_origin(kb.id) == ("ed", False)
    doc_id, _ = _document(home, kb, "a.md")
    home.catalog.delete_document(doc_id)
    assert home.catalog.kb_origin(kb.id) == ("ed", True)  # it held one once


def test_the_deployment_id_is_made_once_and_kept_across_reopening(home: Home) -> None:
    first = home.catalog.deployment()
    assert len(first) == 12 and first == home.catalog.deployment()
    home.close()
    again = home.reopen()
    try:
        assert again.catalog.deployment() == first
    finally:
        again.close()


def test_a_home_whose_knowledge_bases_predate_the_deployment_id_keeps_none(home: Home) -> None:
    home.catalog.create_kb("older")
    assert home.catalog.deployment() == "" == home.catalog.deployment()


def test_a_transaction_that_raises_leaves_nothing_behind(home: Home) -> None:
    with pytest.raises(RuntimeError), home.catalog.transaction():
        kb = home.catalog.create_kb("kb")
        _document(home, kb, "a.md")
        home.users.set_members(kb.id, ["ann"])
        raise RuntimeError("halfway")
    assert home.catalog.find_kb("kb") is None and home.users.restricted() == {}


# --- documents and chunks ----------------------------------------------------------------------


def test_an_added_document_is_chunked_until_marked_indexed(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    doc_id, chunk_ids = _document(home, kb, "b.md", chunks=3)
    _document(home, kb, "a.md")
    assert len(chunk_ids) == 3 and chunk_ids == sorted(chunk_ids)
    doc = home.catalog.find_document(kb.id, "b.md")
    assert doc is not None and doc.id == doc_id and doc.status == DocumentState.CHUNKED
    assert (doc.title, doc.chunks, doc.sha256, doc.kind) == ("Title b.md", 3, "sha-b.md", "md")
    assert [d.source for d in home.catalog.list_documents(kb.id)] == ["a.md", "b.md"]
    assert home.catalog.kb_counts(kb.id) == (0, 0)  # only indexed documents count
    home.catalog.mark_indexed([doc_id])
    assert home.catalog.kb_counts(kb.id) == (1, 3)
    states = home.catalog.document_states(kb.id)
    assert states["b.md"].id == doc_id and states["b.md"].unchanged("sha-b.md")
    assert states["a.md"].status == DocumentState.CHUNKED
    assert home.catalog.find_document(kb.id, "c.md") is None


def test_a_failure_replaces_the_row_of_its_source_and_keeps_its_error(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    _document(home, kb, "a.pdf")
    home.catalog.record_failure(kb.id, source="a.pdf", sha256="s", kind="pdf", error="no text")
    [doc] = home.catalog.list_documents(kb.id)
    assert (doc.status, doc.error, doc.chunks) == (DocumentState.FAILED, "no text", 0)
    assert home.catalog.chunk_ids(kb.id) == []


def test_removing_flags_a_document_and_deleting_takes_its_chunks(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    doc_id, chunk_ids = _document(home, kb, "a.md")
    other, others = _document(home, kb, "b.md")
    home.catalog.mark_indexed([doc_id, other])
    home.catalog.mark_removing([doc_id])
    doc = home.catalog.find_document(kb.id, "a.md")
    assert doc is not None and doc.status == DocumentState.REMOVING
    home.catalog.delete_document(doc_id)
    assert home.catalog.find_document(kb.id, "a.md") is None
    assert home.catalog.chunks_by_id(chunk_ids) == {}
    assert home.catalog.chunk_ids(kb.id) == others


def test_the_documents_version_moves_when_a_document_comes_or_is_indexed(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    empty = home.catalog.documents_version(kb.id)
    doc_id, _ = _document(home, kb, "a.md")
    added = home.catalog.documents_version(kb.id)
    home.catalog.mark_indexed([doc_id])
    indexed = home.catalog.documents_version(kb.id)
    assert empty == (0, 0, 0) and added == (1, doc_id, 0) and indexed == (1, doc_id, 1)


def test_lead_chunks_are_the_first_chunk_of_each_indexed_document(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    doc_id, chunk_ids = _document(home, kb, "a.md", chunks=3)
    _document(home, kb, "b.md")  # not indexed: no lead
    home.catalog.mark_indexed([doc_id])
    assert home.catalog.lead_chunks(kb.id) == [("Title a.md", chunk_ids[0], doc_id)]


def test_chunks_by_id_carry_their_document_and_knowledge_base(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    doc_id, chunk_ids = _document(home, kb, "a.md")
    found = home.catalog.chunks_by_id([chunk_ids[1], 999])
    assert list(found) == [chunk_ids[1]]
    row = found[chunk_ids[1]]
    assert (row["text"], row["heading_path"], row["ordinal"]) == ("text 1", ("H",), 1)
    assert (row["source"], row["title"], row["kb"], row["document_id"]) == (
        "a.md",
        "Title a.md",
        "kb",
        doc_id,
    )
    assert home.catalog.chunks_by_id([]) == {}


def test_chunk_sources_name_each_chunks_document_in_one_knowledge_base_only(home: Home) -> None:
    kb, other = home.catalog.create_kb("kb"), home.catalog.create_kb("other")
    _, a = _document(home, kb, "a.md")
    _, b = _document(home, kb, "docs/b.md", chunks=1)
    _document(home, other, "c.md")
    assert home.catalog.chunk_sources(kb.id) == {a[0]: "a.md", a[1]: "a.md", b[0]: "docs/b.md"}
    assert home.catalog.chunk_sources(home.catalog.create_kb("empty").id) == {}


def test_chunk_ids_are_a_knowledge_bases_or_some_documents_in_id_order(home: Home) -> None:
    kb, other = home.catalog.create_kb("kb"), home.catalog.create_kb("other")
    a, a_chunks = _document(home, kb, "a.md")
    b, b_chunks = _document(home, kb, "b.md", chunks=3)
    _document(home, other, "c.md")
    assert home.catalog.chunk_ids(kb.id) == a_chunks + b_chunks
    assert home.catalog.chunk_ids(kb.id, [b]) == b_chunks
    assert home.catalog.chunk_ids(kb.id, []) == []


# --- what crosses stores -----------------------------------------------------------------------


def test_deleting_a_knowledge_base_deletes_everything_of_it_and_nothing_else(home: Home) -> None:
    kb, kept = home.catalog.create_kb("kb"), home.catalog.create_kb("kept")
    for k in (kb, kept):
        _, chunk_ids = _document(home, k, "a.md")
        entity = home.graph.create_entity(k.id, key="x", type_="concept", name="X", attributes={})
        home.graph.mention_entity(entity, chunk_ids[0], "X", "an x", {})
        home.graph.add_questions(k.id, [(chunk_ids[0], "what?", 1, 1)])
        home.users.set_members(k.id, ["ann"])
        home.jobs.claim(k.id, total=1, paths=[], staging="", owner=(1, "t", "h"), alive=_alive)
    home.catalog.delete_kb(kb.id)
    assert home.catalog.find_kb("kb") is None and home.catalog.list_documents(kb.id) == []
    assert home.catalog.chunk_ids(kb.id) == [] and home.graph.stats(kb.id).entities == 0
    assert home.users.members(kb.id) == [] and home.jobs.all(kb.id) == []
    assert home.catalog.kb_counts(kept.id) == (0, 0) and len(home.catalog.chunk_ids(kept.id)) == 2
    assert home.graph.stats(kept.id).entities == 1 and home.users.members(kept.id) == ["ann"]
    assert len(home.jobs.all(kept.id)) == 1


def test_a_knowledge_base_dumped_and_loaded_comes_back_under_new_ids(home: Home) -> None:
    kb = home.catalog.create_kb("kb", mode="graph", tags=["t"], description="d")
    doc_id, chunk_ids = _document(home, kb, "a.md")
    home.catalog.mark_indexed([doc_id])
    (question,) = home.graph.add_questions(kb.id, [(chunk_ids[1], "what?", 2, 2)])
    a = home.graph.create_entity(kb.id, key="a", type_="concept", name="A", attributes={})
    b = home.graph.create_entity(kb.id, key="b", type_="concept", name="B", attributes={})
    home.graph.mention_entity(a, chunk_ids[0], "A", "first", {})
    home.graph.mention_entity(b, chunk_ids[1], "B", "second", {})
    home.graph.relate(kb.id, a, b, "uses", chunk_ids[1], "A uses B")
    home.graph.mark_degraded([chunk_ids[1]])
    meta, tables = dump_kb(home.catalog, home.graph, kb)
    assert meta["name"] == "kb" and meta["tags"] == ["t"] and meta["build_mode"] == "graph"
    assert {t: len(rows) for t, rows in tables.items()} == {
        "documents": 1,
        "chunks": 2,
        "questions": 1,
        "entities": 2,
        "entity_aliases": 2,
        "relations": 1,
        "entity_mentions": 2,
        "relation_mentions": 1,
        "degraded_chunks": 1,
    }
    copy, ids = load_kb(home.catalog, home.graph, "copy", meta, tables, embedding=("e5", 384))
    assert (copy.name, copy.embedding, copy.dimension, copy.tags) == ("copy", "e5", 384, ("t",))
    [doc] = home.catalog.list_documents(copy.id)
    assert doc.id == ids["documents"][doc_id] != doc_id
    assert doc.status == DocumentState.CHUNKED  # indexed again once its vectors are written
    new_chunks = home.catalog.chunk_ids(copy.id)
    assert new_chunks == [ids["chunks"][c] for c in chunk_ids]
    assert home.graph.question_chunks([ids["questions"][question]]) == {
        ids["questions"][question]: new_chunks[1]
    }
    [edge] = home.graph.relations_of(ids["entities"][a])
    assert (edge.source, edge.target, edge.type) == (ids["entities"][a], ids["entities"][b], "uses")
    assert home.graph.build_history(copy.id, new_chunks)[0] == 1  # one chunk is degraded
    assert dump_kb(home.catalog, home.graph, kb) == (meta, tables)  # the source is unchanged


def test_a_dump_whose_rows_do_not_hold_together_loads_nothing(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    _document(home, kb, "a.md")
    meta, tables = dump_kb(home.catalog, home.graph, kb)
    tables["chunks"][0]["document_id"] = 12345  # points at no dumped document
    with pytest.raises(ParseError, match="row 1 of chunks"):
        load_kb(home.catalog, home.graph, "copy", meta, tables, embedding=("e5", 384))
    assert home.catalog.find_kb("copy") is None


# --- build jobs --------------------------------------------------------------------------------


def _alive(row: Mapping[str, Any]) -> bool:
    return row["pid"] == 1  # process 1 lives; every other has ended


def test_a_claimed_job_is_running_with_its_paths_and_owner(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    job = home.jobs.claim(
        kb.id, total=3, paths=["/a", "/b"], staging="/s", owner=(1, "t1", "h"), alive=_alive
    )
    [row] = home.jobs.all(kb.id)
    assert row["id"] == job and row["status"] == JobState.RUNNING
    assert (row["total"], row["paths"], row["staging"], row["pid"], row["pid_started"]) == (
        3,
        '["/a", "/b"]',
        "/s",
        1,
        "t1",
    )


def test_a_live_processs_running_job_refuses_a_second_claim(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    job = home.jobs.claim(
        kb.id, total=1, paths=["/a"], staging="", owner=(1, "t", "h"), alive=_alive
    )
    with pytest.raises(BuildBusyError) as refused:
        home.jobs.claim(kb.id, total=1, paths=["/b"], staging="", owner=(2, "t", "h"), alive=_alive)
    assert (refused.value.job_id, refused.value.pid) == (job, 1)
    assert [r["id"] for r in home.jobs.all(kb.id)] == [job]


def test_a_dead_processs_job_is_interrupted_and_taken_over_by_a_claim_of_the_same_paths(
    home: Home,
) -> None:
    kb = home.catalog.create_kb("kb")
    dead = home.jobs.claim(
        kb.id, total=1, paths=["/a"], staging="", owner=(7, "t", "h"), alive=_alive
    )
    other = home.jobs.claim(
        kb.id, total=2, paths=["/b"], staging="", owner=(1, "t", "h"), alive=_alive
    )
    assert other != dead  # other paths: a job of its own, the dead one interrupted
    assert home.jobs.all(kb.id, status=JobState.INTERRUPTED)[0]["id"] == dead
    home.jobs.finish(other, status=JobState.DONE, done=2, failed=0)
    again = home.jobs.claim(
        kb.id, total=5, paths=["/a"], staging="", owner=(1, "u", "h"), alive=_alive
    )
    assert again == dead
    row = home.jobs.all(kb.id, status=JobState.RUNNING)[0]
    assert (row["id"], row["total"], row["pid_started"], row["finished_at"]) == (dead, 5, "u", None)


def test_set_status_and_finish_record_state_counts_and_message(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    job = home.jobs.claim(kb.id, total=4, paths=[], staging="", owner=(1, "t", "h"), alive=_alive)
    home.jobs.set_status(job, JobState.PAUSED, "the endpoint is away")
    [row] = home.jobs.all(kb.id)
    assert (row["status"], row["message"]) == ("paused", "the endpoint is away")
    home.jobs.finish(job, status=JobState.CANCELLED, done=3, failed=1, message="1 left to build")
    [row] = home.jobs.all(kb.id)
    assert (row["status"], row["done"], row["failed"], row["message"]) == (
        "cancelled",
        3,
        1,
        "1 left to build",
    )
    assert row["finished_at"] is not None


def test_interrupt_dead_marks_only_the_jobs_of_ended_processes(home: Home) -> None:
    kb, other = home.catalog.create_kb("kb"), home.catalog.create_kb("other")
    live = home.jobs.claim(kb.id, total=1, paths=[], staging="", owner=(1, "t", "h"), alive=_alive)
    dead = home.jobs.claim(
        other.id, total=1, paths=[], staging="", owner=(9, "t", "h"), alive=_alive
    )
    home.jobs.interrupt_dead(_alive)
    assert [(r["id"], r["status"]) for r in home.jobs.all()] == [
        (live, "running"),
        (dead, "interrupted"),
    ]
    assert [r["id"] for r in home.jobs.all(status="interrupted")] == [dead]
    assert home.jobs.all(other.id, status="running") == []


def test_a_beat_records_progress_and_brings_back_a_cancel_asked_by_another_process(
    home: Home,
) -> None:
    kb = home.catalog.create_kb("kb")
    job = home.jobs.claim(kb.id, total=9, paths=[], staging="", owner=(1, "t", "h"), alive=_alive)
    beat = home.jobs.beat(
        job, done=4, total=9, stage="embed", progress=0.4, chunks=12, embedded=14, queued=20
    )
    assert beat is False
    row = home.jobs.get(job)
    assert row is not None and row["heartbeat"] > 0
    assert (row["done"], row["stage"], row["progress"], row["chunks"]) == (4, "embed", 0.4, 12)
    assert (row["embedded"], row["queued"]) == (14, 20)
    assert home.jobs.request_cancel(job) is True
    assert home.jobs.beat(job, done=5, total=9, stage="embed", progress=0.5, chunks=15) is True
    home.jobs.finish(job, status=JobState.CANCELLED, done=5, failed=0)
    assert home.jobs.request_cancel(job) is False  # an ended job has nothing to stop
    assert home.jobs.get(job + 1000) is None


def test_unfinished_lists_jobs_at_work_and_interrupted_but_not_ended_ones(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    states = ("running", "paused", "interrupted", "done", "failed", "cancelled")
    ids = {}
    for state in states:
        other = home.catalog.create_kb(f"kb-{state}")  # one job at work per knowledge base
        ids[state] = home.jobs.claim(
            other.id, total=1, paths=[], staging="", owner=(1, "t", "h"), alive=_alive
        )
        home.jobs.set_status(ids[state], state)
    assert kb.id not in {r["kb_id"] for r in home.jobs.unfinished()}
    assert [r["id"] for r in home.jobs.unfinished()] == [ids[s] for s in states[:3]]


def test_a_resumed_claim_takes_the_new_owner_paths_and_staging(home: Home) -> None:
    kb = home.catalog.create_kb("kb")
    dead = home.jobs.claim(
        kb.id, total=2, paths=["/a/x"], staging="/a", owner=(7, "t", "one"), alive=_alive
    )
    home.jobs.request_cancel(dead)
    again = home.jobs.claim(
        kb.id,
        total=2,
        paths=["/b/x"],
        staging="/b",
        owner=(1, "u", "two"),
        alive=_alive,
        resume=dead,
    )
    row = home.jobs.get(again)
    assert again == dead and row is not None
    assert (row["paths"], row["staging"], row["pid"], row["host"]) == ('["/b/x"]', "/b", 1, "two")
    assert row["cancel_requested"] == 0  # a cancel asked of the dead owner is not this one's


def test_staged_uploads_are_kept_read_back_byte_for_byte_and_dropped(home: Home) -> None:
    content = bytes(range(256)) * 4  # not text: a PDF's bytes come back as they went in
    home.jobs.keep_staged("job1", [("a.pdf", content), ("dup-1/a.pdf", b"second")])
    home.jobs.keep_staged("job1", [("a.pdf", b"ignored")])  # kept once: a retry changes nothing
    home.jobs.keep_staged("job2", [("b.md", b"# b")])
    assert home.jobs.staged("job1") == [("a.pdf", content), ("dup-1/a.pdf", b"second")]
    home.jobs.drop_staged("job1")
    assert home.jobs.staged("job1") == [] and home.jobs.staged("job2") == [("b.md", b"# b")]


# --- the LLM cache -----------------------------------------------------------------------------


def test_a_cached_response_reads_back_is_replaced_and_survives_reopening(home: Home) -> None:
    assert home.cache.get("k") is None and len(home.cache) == 0
    home.cache.put("k", "model", {"answer": "一", "n": 1})
    home.cache.put("k", "model", {"answer": "二"})
    home.cache.put("other", "model", {"x": []})
    assert home.cache.get("k") == {"answer": "二"} and len(home.cache) == 2
    home.close()
    again = home.reopen()
    try:
        assert again.cache.get("other") == {"x": []}
    finally:
        again.close()
