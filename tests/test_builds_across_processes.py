"""Builds seen, cancelled and taken over across processes (issue 38): another process (an app
instance, a command) runs a build on the same catalog; this one lists it with its progress,
a command (`zhixing builds`) lists it and cancels it through its row, and, once that process is killed, resumes it here.

On the embedded default, both processes open one home (its SQLite catalog, its Milvus Lite
file served by whichever opened it first). On a team's set-up, two homes share a catalog on
PostgreSQL and a Milvus server: the killed process's uploads are on its own home's disk, which
is removed before the take-over, so the files come from the catalog's copy, as they would on
another machine. Real processes, real Milvus, real SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.command import ROOT, run_python
from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

pytestmark = [pytest.mark.process, pytest.mark.slow]

N = 120  # documents: enough that the build is still running when it is cancelled or killed
WORDS = ["firewall", "router", "cipher", "token", "session", "kernel", "packet", "audit"]

# The other process: an app's way of building (uploads staged by the registry of background
# builds), told its knowledge base and upload folder; it prints its job's id and waits for it.
_BUILDER = """
import sys, pathlib
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService
folder = pathlib.Path(sys.argv[2])
uploads = [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
with KnowledgeService(Settings.from_env()) as service:
    view = service.builds.start(sys.argv[1], uploads)
    print(view.id, flush=True)
    print(service._home.jobs.wait(view.id).state, flush=True)
"""


def _documents(folder: Path) -> Path:
    folder.mkdir()
    for i in range(N):
        words = " ".join(f"{WORDS[(i + j) % len(WORDS)]}{(i * 7 + j) % 97}" for j in range(60))
        (folder / f"record-{i:03d}.md").write_text(f"# Record {i}\n\n{words}\n", encoding="utf-8")
    return folder


@dataclass
class Team:
    """Where the two processes' homes are and what they share."""

    mine: Settings
    theirs: dict[str, str]  # the other process's environment
    their_home: Path


@pytest.fixture(scope="module")
def slow_model() -> Iterator[FakeOpenAI]:
    """The other process's model: a fake endpoint that takes its time over each chunk, so that
    its build is still running while this process and a command look at it."""
    with FakeOpenAI(latency_s=0.25) as fake:
        yield fake


@pytest.fixture(params=["one home", "postgres and milvus server"])
def team(request: pytest.FixtureRequest, tmp_path: Path, slow_model: FakeOpenAI) -> Iterator[Team]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZHIXING_", "OPENAI_"))}
    env["ZHIXING_EMBED_BATCH"] = "8"  # its documents indexed a few at a time, not all at the end
    env |= {"OPENAI_BASE_URL": slow_model.url, "OPENAI_API_KEY": "sk-test"}
    env["ZHIXING_LLM_CONCURRENCY"] = "1"
    if request.param == "one home":
        home = tmp_path / "home"
        yield Team(Settings(home=home), {**env, "ZHIXING_HOME": str(home)}, home)
        return
    catalog = request.getfixturevalue("postgres_cluster").new_database()
    milvus = request.getfixturevalue("milvus_server")
    shared = {"ZHIXING_CATALOG_URI": catalog, "ZHIXING_MILVUS_URI": milvus}
    theirs = tmp_path / "their-home"
    mine = Settings.from_env({"ZHIXING_HOME": str(tmp_path / "my-home"), **shared})
    yield Team(mine, {**env, "ZHIXING_HOME": str(theirs), **shared}, theirs)


def _start_builder(team: Team, folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _BUILDER, "big", str(folder)],
        cwd=ROOT,
        env=team.theirs,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _until(check: Callable[[], object], what: str, timeout_s: float = 120) -> object:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def _theirs(service: KnowledgeService):  # noqa: ANN202
    """The build another process runs (or ran), as this process lists it; None before."""
    return next((j for j in service.builds.jobs() if j.elsewhere), None)


def _indexed(service: KnowledgeService) -> list[str]:
    return sorted(d.source for d in service.kbs.documents("big") if d.status == "indexed")


@dataclass
class Building:
    """This process's service on the set, and the other process building "big" from uploads."""

    service: KnowledgeService
    builder: subprocess.Popen[str]


@pytest.fixture
def building(team: Team, tmp_path: Path, embedder) -> Iterator[Building]:  # noqa: ANN001
    folder = _documents(tmp_path / "docs")
    with KnowledgeService(team.mine, embedder=embedder) as service:
        service.kbs.create("big")
        builder = _start_builder(team, folder)
        try:
            yield Building(service, builder)
        finally:
            builder.kill()
            builder.wait()


def test_a_build_of_another_process_is_listed_with_its_progress_and_cancelled_from_here(
    team: Team, building: Building
) -> None:
    service, builder = building.service, building.builder
    # Seen from here: its knowledge base, files, owner and progress as its heartbeat wrote.
    view = _until(
        lambda: (j := _theirs(service)) is not None and j.chunks > 0 and j,
        "the other process's build to report chunks indexed",
    )
    assert view.kb == "big" and view.running and len(view.files) == N
    assert view.queued >= view.embedded >= view.chunks > 0  # the embedding's counts too
    assert f"pid {builder.pid}" in view.elsewhere and 0 < view.done <= view.total == N
    assert service.builds.running("big") == view  # this process may not build it now
    # A command, a third process, lists it and cancels it through its row.
    listed = run_python("-m", "zhixing.cli.main", "builds", "--json", env=team.theirs)
    [row] = json.loads(listed.stdout)
    assert (row["kb"], row["state"], row["total"]) == ("big", "running", N), listed.stderr
    assert f"pid {builder.pid}" in row["owner"] and f"db-{row['id']}" == view.id
    cancel = ["-m", "zhixing.cli.main", "builds", "--cancel", row["id"]]
    cancelled = run_python(*cancel, env=team.theirs)
    assert cancelled.returncode == 0 and "stops within seconds" in cancelled.stdout
    now = service.builds.job(view.id)  # asked to stop, or stopped already
    assert now is None or now.cancel_requested
    out, err = builder.communicate(timeout=120)
    assert builder.returncode == 0, err
    assert out.split()[-1] == "cancelled"
    [row] = service._home.catalog.jobs.all(service.kbs.get("big").id)
    assert row["status"] == "cancelled" and "left to build" in row["message"]
    # What the cancel kept is whole; nothing of the other process's build is listed now.
    indexed = _indexed(service)
    assert 0 < len(indexed) < N and _theirs(service) is None
    assert {d.status for d in service.kbs.documents("big")} == {"indexed"}


def test_a_killed_build_of_another_process_is_taken_over_and_finished_here(
    team: Team, building: Building
) -> None:
    service, builder = building.service, building.builder
    _until(lambda: len(_indexed(service)) >= 10, "the other process to index documents")
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    partial = len(_indexed(service))
    assert partial < N, "the kill must land mid-build for this test to mean anything"
    view = _theirs(service)
    assert view is not None and view.state == "interrupted" and not view.running
    assert service.builds.running("big") is None
    if team.their_home != team.mine.home:  # another machine: its disk is not this one's
        shutil.rmtree(team.their_home)
    taken = service.builds.resume(view.id)
    assert taken.running and not taken.elsewhere
    done = service._home.jobs.wait(taken.id, 180)
    assert done.state == "done", done.error
    docs = service.kbs.documents("big")
    assert len(docs) == N and {d.status for d in docs} == {"indexed"}
    kb = service.kbs.get("big")
    chunks = sum(d.chunks for d in docs)
    assert service._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk") == chunks
    [row] = service._home.catalog.jobs.all(kb.id)  # the same job, finished here
    assert row["status"] == "done" and row["pid"] == os.getpid()
    assert service._home.catalog.jobs.staged(Path(row["staging"]).name) == []
    hits = service.search.query("Record 117", ["big"], top_k=3)
    assert any(h.document == "record-117.md" for h in hits)
    assert _theirs(service) is None
