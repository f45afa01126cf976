"""Faults a shared server meets: a killed build, an LLM endpoint that goes away, determinism.

Real Milvus Lite and SQLite in temp dirs; the LLM is the real HTTP fake (tests/fake_openai.py).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.command import ROOT, Ran, zhixing
from tests.fake_openai import FakeOpenAI
from tests.faults_support import (
    catalog_counts,
    confined,
    graph_corpus,
    indexed_documents,
    kill_midway,
    milvus_counts,
    responder,
    snapshot,
)
from zhixing.core.build import ProgressEvent
from zhixing.core.build.background import BuildJobs
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService
from zhixing.core.store import VectorStore

FAST_LLM = {"max_attempts": 1, "backoff_s": 0.01, "timeout_s": 10}


@pytest.fixture
def fake():
    with FakeOpenAI(responder, latency_s=0.005) as server:
        yield server


def _service(home: Path, fake: FakeOpenAI, **settings) -> KnowledgeService:
    """A service on the fake for chat and embeddings (so an outage hits both)."""
    options = {"embed_batch": 16, "parse_workers": 1, "llm_concurrency": 4, **settings}
    return KnowledgeService(
        Settings(
            home=home,
            openai_base_url=fake.url,
            openai_api_key="sk-test",
            embedding="openai:fake-embed",
            **options,
        ),
        llm_options=FAST_LLM,
    )


def _build(home: Path, corpus: Path, fake: FakeOpenAI, **settings) -> dict:
    with _service(home, fake, **settings) as svc:
        svc.kbs.create("kg", mode="graph")
        report = svc.builds.add("kg", [corpus])
        assert report.ok, report
        kb = svc.kbs.get("kg")
        counts = milvus_counts(svc._home.vectors, kb.dimension, kb.id)
    assert counts == catalog_counts(home / "catalog.db")
    return snapshot(home / "catalog.db")


@pytest.mark.slow
def test_a_graph_build_is_the_same_whatever_the_llm_concurrency(tmp_path, fake):
    corpus = graph_corpus(tmp_path / "corpus.jsonl", 60)
    one = _build(tmp_path / "c1", corpus, fake, llm_concurrency=1)
    many = _build(tmp_path / "c8", corpus, fake, llm_concurrency=8, embed_batch=7)
    assert one == many
    assert one["entities"] and one["relations"] and one["questions"]
    # Descriptions grew past the limit and were summarized: the merge order matters here.
    assert any(d.startswith("Summary ") for _, _, d, _ in one["entities"])


# --- a killed build, resumed ------------------------------------------------------------------


def _cli_env(home: Path, fake: FakeOpenAI) -> dict[str, str]:
    return {
        **os.environ,
        "ZHIXING_HOME": str(home),
        "OPENAI_BASE_URL": fake.url,
        "OPENAI_API_KEY": "sk-test",
        "ZHIXING_EMBEDDING": "openai:fake-embed",
        "ZHIXING_LLM_CONCURRENCY": "4",
        "ZHIXING_EMBED_BATCH": "64",  # a kill after the first batch still leaves most undone
    }


def _cli(home: Path, fake: FakeOpenAI, *args: str) -> Ran:
    """`zhixing ARGS` in this process, on the fake endpoint: the set-up and the checks around
    a fault. The faults themselves (a kill, a read-only home, a full disk) hit real processes."""
    env = _cli_env(home, fake)
    return zhixing(home, *args, env={k: env[k] for k in _FAKE_ENV})


_FAKE_ENV = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ZHIXING_EMBEDDING",
    "ZHIXING_LLM_CONCURRENCY",
    "ZHIXING_EMBED_BATCH",
)


def _milvus(home: Path) -> dict[str, int]:
    with sqlite3.connect(home / "catalog.db") as conn:
        kb_id, dimension = conn.execute("SELECT id, dimension FROM knowledge_bases").fetchone()
        (deployment,) = conn.execute("SELECT value FROM home WHERE key = 'deployment'").fetchone()
    store = VectorStore(str(home / "milvus.db"), deployment=deployment)
    try:
        store.ensure_collection(dimension)
        return milvus_counts(store, dimension, kb_id)
    finally:
        store.close()


@pytest.mark.process
@pytest.mark.slow
def test_a_killed_graph_build_resumes_to_exactly_the_uninterrupted_result(tmp_path, fake):
    n = 160  # the command embeds in batches of 64 chunks here: the kill lands after the first
    corpus = graph_corpus(tmp_path / "corpus.jsonl", n)
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    for home in (reference, killed):
        assert _cli(home, fake, "kb", "create", "kg", "--mode", "graph").returncode == 0
    done = _cli(reference, fake, "add", "kg", str(corpus), "--json")
    assert done.returncode == 0, done.stderr

    build = kill_midway(
        ["add", "kg", str(corpus)],
        _cli_env(killed, fake),
        until=lambda: indexed_documents(killed / "catalog.db") > 0,
        poll_s=0.02,
    )
    partial = indexed_documents(killed / "catalog.db")
    assert 0 < partial < n, "the kill must land mid-build for this test to mean anything"
    with sqlite3.connect(killed / "catalog.db") as conn:
        [(status, paths, pid)] = conn.execute("SELECT status, paths, pid FROM jobs").fetchall()
    assert status == "running" and pid == build.pid and str(corpus) in paths

    resumed = _cli(killed, fake, "resume", "--json")
    assert resumed.returncode == 0, resumed.stderr
    [summary] = json.loads(resumed.stdout)
    assert summary["skipped"] >= partial and summary["added"] + summary["skipped"] == n
    with sqlite3.connect(killed / "catalog.db") as conn:
        assert conn.execute("SELECT status FROM jobs").fetchall() == [("done",)]
        resumes = conn.execute(
            "SELECT user_name, target FROM audit WHERE action = ?", ["documents.resume"]
        )
        assert resumes.fetchall() == [("local", "kg")]  # who finished the build, and when
    assert _cli(killed, fake, "resume", "--json").stdout.strip() == "[]"  # nothing left

    assert snapshot(killed / "catalog.db") == snapshot(reference / "catalog.db")
    assert _milvus(killed) == catalog_counts(killed / "catalog.db") == _milvus(reference)


# --- the LLM endpoint goes away mid-build -------------------------------------------------------


def _until(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _job_status(svc: KnowledgeService) -> str:
    return svc._home.catalog.jobs.all(svc.kbs.get("kg").id)[-1]["status"]


@pytest.mark.slow
def test_a_build_pauses_while_the_endpoint_is_away_and_then_finishes_the_same(tmp_path, fake):
    corpus = graph_corpus(tmp_path / "corpus.jsonl", 160)
    reference = _build(tmp_path / "reference", corpus, fake)
    fake.latency_s = 0.02
    jobs = BuildJobs()
    with _service(tmp_path / "home", fake, llm_max_pause_s=120) as svc:
        kb = svc.kbs.create("kg", mode="graph")
        job = jobs.start(svc.builds, "kg", paths=[corpus])
        _until(lambda: svc._home.catalog.kb_counts(kb.id)[0] > 0)
        fake.stop()
        _until(lambda: jobs.get(job.id).state == "paused")
        assert _job_status(svc) == "paused"
        paused = [line for line in jobs.get(job.id).log if line.stage == "paused"]
        assert f"The LLM endpoint at {fake.url} cannot be reached" in paused[0].message
        assert "the build is paused and retries every" in paused[0].message
        time.sleep(1.0)  # a few retries against a closed port
        fake.start()  # same port
        job = jobs.wait(job.id, 120)
        assert job.state == "done" and job.report.ok, job.error
        assert "resumed" in [line.stage for line in job.log]
        assert _job_status(svc) == "done"
        assert milvus_counts(svc._home.vectors, kb.dimension, kb.id) == catalog_counts(
            svc.settings.catalog_path
        )
    assert snapshot(tmp_path / "home" / "catalog.db") == reference


@pytest.mark.slow
def test_cancel_while_paused_ends_the_job_cleanly_and_it_resumes_later(tmp_path, fake):
    corpus = graph_corpus(tmp_path / "corpus.jsonl", 120)
    fake.latency_s = 0.02
    events: list[ProgressEvent] = []
    cancel = threading.Event()
    with _service(tmp_path / "home", fake, llm_max_pause_s=120) as svc:
        kb = svc.kbs.create("kg", mode="graph")
        out: dict = {}
        worker = threading.Thread(
            target=lambda: out.update(r=svc.builds.add("kg", [corpus], events.append, cancel))
        )
        worker.start()
        _until(lambda: svc._home.catalog.kb_counts(kb.id)[0] > 0)
        fake.stop()
        _until(lambda: any(e.stage == "paused" for e in events))
        started = time.monotonic()
        cancel.set()
        worker.join(30)
        assert not worker.is_alive() and time.monotonic() - started < 10
        assert _job_status(svc) == "cancelled" and not out["r"].stopped
        states = {d.status for d in svc.kbs.documents("kg")}
        assert states <= {"indexed", "chunked"}  # a chunked one is redone next time
        fake.start()
        again = svc.builds.add("kg", [corpus])
        assert again.ok and {d.status for d in svc.kbs.documents("kg")} == {"indexed"}
        assert len(svc.kbs.documents("kg")) == 120
        assert milvus_counts(svc._home.vectors, kb.dimension, kb.id) == catalog_counts(
            svc.settings.catalog_path
        )


@pytest.mark.slow
def test_a_pause_longer_than_the_limit_stops_the_build_resumably(tmp_path, fake):
    corpus = graph_corpus(tmp_path / "corpus.jsonl", 40)
    with _service(tmp_path / "home", fake, llm_max_pause_s=1.0) as svc:
        kb = svc.kbs.create("kg", mode="graph")
        svc.embedder.dimension  # noqa: B018 - probe the embedding size while the server is up
        fake.stop()
        report = svc.builds.add("kg", [corpus])
        assert not report.ok and "could not be reached" in report.stopped
        assert "waited 1 s for it and stopped; run `zhixing resume kg`" in report.stopped
        assert _job_status(svc) == "interrupted"
        fake.start()
        [resumed] = svc.builds.resume_interrupted("kg")
        assert resumed.ok and len(svc.kbs.documents("kg")) == 40
        assert _job_status(svc) == "done" and svc.builds.resume_interrupted() == []
        assert milvus_counts(svc._home.vectors, kb.dimension, kb.id) == catalog_counts(
            svc.settings.catalog_path
        )


# --- a read-only home, a full disk -------------------------------------------------------------


def _as_reader_only(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a command that may read but not write a read-only home, root or not."""
    return subprocess.run(
        confined(command, drop_root_overrides=os.geteuid() == 0),
        cwd=ROOT,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        text=True,
        capture_output=True,
        timeout=300,
        check=False,
    )


def _chmod_tree(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755 if writable else 0o555)
        elif path.is_file():
            path.chmod(0o644 if writable else 0o444)


def _assert_intact(home: Path, fake: FakeOpenAI, before: dict) -> None:
    assert snapshot(home / "catalog.db") == before
    assert _milvus(home) == catalog_counts(home / "catalog.db")
    hits = json.loads(_cli(home, fake, "search", "kg", "Kernel1", "--json").stdout)
    assert hits["hits"] and all(h["document"].startswith("doc-") for h in hits["hits"])


def _built_home(tmp_path: Path, fake: FakeOpenAI) -> tuple[Path, dict]:
    """A home with a small graph knowledge base `kg`, and a snapshot of its catalog."""
    home = tmp_path / "home"
    corpus = graph_corpus(tmp_path / "corpus.jsonl", 20)
    assert _cli(home, fake, "kb", "create", "kg", "--mode", "graph").returncode == 0
    assert _cli(home, fake, "add", "kg", str(corpus)).returncode == 0
    return home, snapshot(home / "catalog.db")


@pytest.mark.process
def test_a_read_only_home_is_refused_in_one_sentence_and_left_intact(tmp_path, fake):
    home, before = _built_home(tmp_path, fake)
    more = graph_corpus(tmp_path / "more.jsonl", 30)
    _chmod_tree(home, writable=False)
    try:
        for args in (["add", "kg", str(more)], ["kb", "create", "other"]):
            out = _as_reader_only(
                [sys.executable, "-m", "zhixing.cli.main", *args], _cli_env(home, fake)
            )
            assert out.returncode == 1, out.stderr
            lines = out.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("zhixing: "), out.stderr
            assert "read-only" in lines[0] and str(home) in lines[0]
    finally:
        _chmod_tree(home, writable=True)
    _assert_intact(home, fake, before)


@pytest.mark.process
def test_a_full_disk_fails_the_build_in_one_sentence_and_keeps_what_was_built(tmp_path, fake):
    home, before = _built_home(tmp_path, fake)
    big = graph_corpus(tmp_path / "big.jsonl", 3000)
    largest = max(p.stat().st_size for p in home.rglob("*") if p.is_file())
    out = subprocess.run(
        confined(
            [sys.executable, "-m", "zhixing.cli.main", "add", "kg", str(big)],
            file_limit=largest + 256 * 1024,
        ),
        cwd=ROOT,
        env=_cli_env(home, fake),
        text=True,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 1
    errors = [line for line in out.stderr.splitlines() if line.startswith("zhixing: ")]
    assert len(errors) == 1 and "disk" in errors[0] and "full" in errors[0], out.stderr
    assert "Traceback" not in out.stderr
    # What was built before is untouched and searchable; the half-built rest is never served.
    kept = snapshot(home / "catalog.db")
    indexed = {s for s, status in kept["documents"] if status == "indexed"}
    assert {s for s, _ in before["documents"]} <= indexed
    assert {status for _, status in kept["documents"]} <= {"indexed", "chunked"}
    assert _milvus(home)["chunk"] >= catalog_counts(home / "catalog.db")["chunk"]
    found = json.loads(_cli(home, fake, "search", "kg", "Kernel1", "--json").stdout)
    assert found["hits"] and all(h["document"] in indexed for h in found["hits"])
    again = _cli(home, fake, "add", "kg", str(tmp_path / "corpus.jsonl"), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["added"] == 0


@pytest.mark.slow
def test_a_home_that_cannot_be_created_gets_one_sentence():
    # Nothing may create folders under /proc, root included.
    result = subprocess.run(
        [sys.executable, "-m", "zhixing.cli.main", "kb", "list"],
        cwd=ROOT,
        env={**os.environ, "ZHIXING_HOME": "/proc/zhixing-nowhere/home"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("zhixing: The Zhixing home /proc/zhixing-nowhere/home")
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_gateway_saying_the_model_server_is_down_pauses_the_build_too(tmp_path, fake):
    corpus = graph_corpus(tmp_path / "corpus.jsonl", 20)
    stages: list[str] = []
    with _service(tmp_path / "home", fake, llm_max_pause_s=60) as svc:
        svc.kbs.create("kg", mode="graph")
        fake.fail(*["503"] * 12)  # a reverse proxy in front of a model server that is down
        report = svc.builds.add("kg", [corpus], on_event=lambda e: stages.append(e.stage))
    assert report.ok and report.degraded == 0
    assert "paused" in stages and "resumed" in stages
    assert not fake.faults  # every 503 was met, then the build went on
