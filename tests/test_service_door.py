"""The service as the only door (issue 14): what a user may not see does not leak through a
name, an entity id, a job, or a grep pattern that would hold the server.

Real Milvus Lite and SQLite in temp dirs, through the service as the named role would hit it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from zhixing.core.config import Settings
from zhixing.core.errors import NotFoundError, StoreError, ZhixingError
from zhixing.core.service import KnowledgeService, User
from zhixing.core.task.workspace import GREP_TIMEOUT_S, Workspace

ED, ALICE = User("ed", "editor"), User("alice", "viewer")


@pytest.fixture
def svc(tmp_path: Path, embedder):  # noqa: ANN001
    doc = tmp_path / "secret.md"
    doc.write_text("# Vault\n\nThe vault key rotates weekly. bcrypt hashes passwords.\n")
    with KnowledgeService(Settings(home=tmp_path / "home"), embedder=embedder) as service:
        for user in (ED, ALICE):
            service.add_user(user.name, user.role, f"{user.name}-password")
        service.create_kb("secret", mode="graph")
        service.add("secret", [doc])
        service.restrict("secret", ["alice"])  # ed, an editor, is not a member
        service.create_kb("open", mode="graph")
        yield service


def test_creating_a_hidden_name_does_not_say_that_it_exists(svc, tmp_path) -> None:  # noqa: ANN001
    ed = svc.as_user(ED)
    with pytest.raises(StoreError) as refused:
        ed.create_kb("secret")
    assert "exists" not in str(refused.value) and "cannot be used" in str(refused.value)
    with pytest.raises(StoreError, match="already exists"):  # a name they may see: said plainly
        ed.create_kb("open")
    archive = tmp_path / "open.zhixing"
    ed.export_kb("open", archive)
    with pytest.raises(StoreError) as imported:
        ed.import_kb(archive, as_name="secret")
    assert "exists" not in str(imported.value) and "--as NAME" in str(imported.value)


def test_an_entity_of_a_hidden_or_other_knowledge_base_reads_as_missing(svc) -> None:  # noqa: ANN001
    member = svc.as_user(ALICE)
    view = member.graph_view("secret")
    assert view.nodes and "allow-same-origin" not in view.html.split("srcdoc")[0]
    entity = view.nodes[0].id
    assert member.entity("secret", entity).name == view.nodes[0].name
    with pytest.raises(NotFoundError, match="no such entity"):
        member.entity("open", entity)  # an id from another knowledge base
    with pytest.raises(ZhixingError, match="restricted"):
        svc.as_user(ED).entity("secret", entity)


@pytest.mark.slow
def test_a_catastrophic_grep_pattern_stops_in_time_and_leaves_the_server_running(tmp_path):
    (tmp_path / "ws").mkdir()
    # `(a+)+$` is caught by the regex module's optimiser; alternation that overlaps is not.
    (tmp_path / "ws" / "a.txt").write_text("a" * 40 + "!\n")
    workspace = Workspace(tmp_path / "ws")
    ticks = 0
    stop = threading.Event()

    def other_session() -> None:  # another page's work, running while the grep backtracks
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.01)

    thread = threading.Thread(target=other_session)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(ZhixingError, match="took longer than .* simpler pattern"):
            workspace.grep("(a|aa)+$")
    finally:
        stop.set()
        thread.join()
    spent = time.monotonic() - started
    assert spent < GREP_TIMEOUT_S * 3  # stopped by its limit, not after the 2**28 steps
    # With the GIL held the other thread would tick about once; released, ~100 times a second.
    assert ticks > spent * 20
