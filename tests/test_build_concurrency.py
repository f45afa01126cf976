"""Builds of one knowledge base never interleave; searches during a build see only what is
indexed; an interrupted job is picked up by the app's job registry. Real Milvus Lite + SQLite."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from zhixing.core.build import BuildBusyError
from zhixing.core.build.background import BuildJobs
from zhixing.core.build.durable import this_process
from zhixing.core.store.catalog import Catalog

EN = "# Note {i}\n\nServer {i} must validate input {i} and log audit event {i} with a timestamp.\n"


def _files(folder, names):
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in names:
        path = folder / f"doc-{i:03d}.md"
        path.write_text(EN.format(i=i), encoding="utf-8")
        paths.append(path)
    return paths


def _consistent(service, name):
    kb = service.kbs.get(name)
    docs = service.kbs.documents(name)
    chunks = service._home.catalog.db.execute(
        "SELECT COUNT(*) FROM chunks WHERE kb_id = ?", (kb.id,)
    ).fetchone()[0]
    assert {d.status for d in docs} == {"indexed"}
    assert chunks == sum(d.chunks for d in docs)
    assert service._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk") == chunks
    questions = service._home.catalog.db.execute("SELECT COUNT(*) FROM questions").fetchone()[0]
    indexed = questions if service.llm is not None else 0  # offline questions are not indexed
    assert service._home.vectors.count(kb.dimension, kb=kb.id, kind="question") == indexed
    return docs


def test_two_builds_of_one_knowledge_base_at_once_never_interleave(service, tmp_path):
    service.kbs.create("kb")
    first = _files(tmp_path / "a", range(0, 40))
    second = _files(tmp_path / "b", range(20, 60))  # overlaps: same names 20..39 in both
    second = first[20:] + second[20:]
    start = threading.Barrier(2)
    outcome: dict[str, object] = {}

    def add(key, paths):
        start.wait()
        try:
            outcome[key] = service.builds.add("kb", paths)
        except BuildBusyError as exc:
            outcome[key] = exc

    threads = [threading.Thread(target=add, args=(k, p)) for k, p in (("a", first), ("b", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    refused = [v for v in outcome.values() if isinstance(v, BuildBusyError)]
    built = [v for v in outcome.values() if not isinstance(v, BuildBusyError)]
    assert len(built) >= 1
    for error in refused:
        assert "already being built" in str(error) and "'kb'" in str(error)
    # Refused: that build changed nothing. Serialized: the second skipped what the first built.
    expected = set(built[0].added) if refused else {p.name for p in first + second}
    docs = _consistent(service, "kb")
    assert {d.source for d in docs} == expected
    # The refused one, run again, builds what it lacks and duplicates nothing.
    service.builds.add("kb", second)
    service.builds.add("kb", first)
    docs = _consistent(service, "kb")
    assert len(docs) == 60


def test_a_live_build_in_another_process_refuses_a_second_one(service, tmp_path):
    kb = service.kbs.create("kb")
    other = subprocess.Popen(["sleep", "30"])
    try:
        from zhixing.core.build.durable import _start_time

        service._home.catalog.jobs.claim(
            kb.id,
            total=1,
            paths=["/elsewhere"],
            staging="",
            owner=(other.pid, _start_time(other.pid) or "", this_process().host),
            alive=lambda row: True,
        )
        with pytest.raises(BuildBusyError, match=f"process {other.pid}"):
            service.builds.add("kb", _files(tmp_path / "a", range(2)))
    finally:
        other.kill()
        other.wait()
    # Its process gone, the job is interrupted and the knowledge base free again.
    report = service.builds.add("kb", _files(tmp_path / "a", range(2)))
    assert report.ok
    statuses = [j["status"] for j in service._home.catalog.jobs.all(kb.id)]
    assert statuses == ["interrupted", "done"]


def test_searches_during_a_build_see_only_indexed_documents(service, tmp_path):
    service.kbs.create("kb")
    service.builds.add("kb", _files(tmp_path / "seed", range(0, 5)))
    more = _files(tmp_path / "more", range(5, 65))
    errors: list[BaseException] = []
    results = 0
    stop = threading.Event()
    lock = threading.Lock()

    def reader(n):
        nonlocal results
        while not stop.is_set():
            try:
                if n % 4 == 0:
                    answer = service.search.ask(
                        f"What must server {n} validate?", ["kb"], max_rounds=1
                    )
                    hits = [c for c in answer.answer.citations]
                    documents = {c.document for c in hits}
                else:
                    found = service.search.query(f"audit event {n * 7}", ["kb"], top_k=5)
                    documents = {h.document for h in found}
                indexed = {d.source for d in service.kbs.documents("kb") if d.status == "indexed"}
                assert documents <= indexed, documents - indexed
                with lock:
                    results += 1
            except BaseException as exc:  # noqa: BLE001 - every failure is reported below
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    report = service.builds.add("kb", more)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    assert report.ok and results > 8
    assert len(_consistent(service, "kb")) == 65


def test_the_app_restarts_an_interrupted_job_and_removes_its_uploads(service, tmp_path):
    kb = service.kbs.create("kb")
    staging = service.settings.home / "uploads" / "abc123def456"
    paths = _files(staging, range(3))
    dead = subprocess.Popen(["true"])
    dead.wait()
    # What a SIGKILL of the server leaves: a `running` job of a process that is gone.
    job_id = service._home.catalog.jobs.claim(
        kb.id,
        total=3,
        paths=[str(p) for p in paths],
        staging=str(staging),
        owner=(dead.pid, "", this_process().host),
        alive=lambda row: False,
    )
    jobs = BuildJobs()
    [view] = jobs.resume_interrupted(service.builds)
    assert view.id == "abc123def456" and view.kb == "kb" and view.running
    view = jobs.wait(view.id, 120)
    assert (
        view.state == "done"
        and view.report.ok
        and sorted(view.report.added) == [p.name for p in paths]
    )
    assert not staging.exists()
    assert [(j["id"], j["status"]) for j in service._home.catalog.jobs.all(kb.id)] == [
        (job_id, "done")
    ]
    assert jobs.resume_interrupted(service.builds) == []
    _consistent(service, "kb")


def test_an_old_catalog_gains_the_durable_job_columns(tmp_path):
    path = tmp_path / "catalog.db"
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL, status TEXT NOT"
            " NULL, total INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0, failed"
            " INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, finished_at REAL);"
            "INSERT INTO jobs (kb_id, status, created_at) VALUES (1, 'done', 0);"
        )
    catalog = Catalog(path)
    try:
        [row] = catalog.jobs.all()
        assert row["status"] == "done" and row["paths"] == "[]" and row["pid"] == 0
        assert this_process().pid > 0
    finally:
        catalog.close()
