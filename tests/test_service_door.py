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
from zhixing.core.errors import AccessError, NotFoundError, StoreError, ZhixingError
from zhixing.core.service import KnowledgeService, User
from zhixing.core.task.workspace import GREP_TIMEOUT_S, Workspace

ED, ALICE = User("ed", "editor"), User("alice", "viewer")


@pytest.fixture
def svc(tmp_path: Path, embedder):  # noqa: ANN001
    doc = tmp_path / "secret.md"
    doc.write_text("# Vault\n\nThe vault key rotates weekly. bcrypt hashes passwords.\n")
    with KnowledgeService(Settings(home=tmp_path / "home"), embedder=embedder) as service:
        for user in (ED, ALICE):
            service.users.add(user.name, user.role, f"{user.name}-password")
        service.kbs.create("secret", mode="graph")
        service.builds.add("secret", [doc])
        service.kbs.restrict("secret", ["alice"])  # ed, an editor, is not a member
        service.kbs.create("open", mode="graph")
        yield service


def test_creating_a_hidden_name_does_not_say_that_it_exists(svc, tmp_path) -> None:  # noqa: ANN001
    ed = svc.as_user(ED)
    with pytest.raises(StoreError) as refused:
        ed.kbs.create("secret")
    assert "exists" not in str(refused.value) and "cannot be used" in str(refused.value)
    with pytest.raises(StoreError, match="already exists"):  # a name they may see: said plainly
        ed.kbs.create("open")
    archive = tmp_path / "open.zhixing"
    ed.kbs.export_archive("open", archive)
    with pytest.raises(StoreError) as imported:
        ed.kbs.import_archive(archive, as_name="secret")
    assert "exists" not in str(imported.value) and "--as NAME" in str(imported.value)


def test_an_entity_of_a_hidden_or_other_knowledge_base_reads_as_missing(svc) -> None:  # noqa: ANN001
    member = svc.as_user(ALICE)
    view = member.graph.view("secret")
    assert view.nodes and {e.source for e in view.edges} <= {n.id for n in view.nodes}
    entity = view.nodes[0].id
    assert member.graph.entity("secret", entity).name == view.nodes[0].name
    with pytest.raises(NotFoundError, match="no such entity"):
        member.graph.entity("open", entity)  # an id from another knowledge base
    with pytest.raises(NotFoundError, match="no knowledge base named 'secret' that ed may see"):
        svc.as_user(ED).graph.entity("secret", entity)


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
    started, cpu = time.monotonic(), time.thread_time()
    try:
        with pytest.raises(ZhixingError, match="took longer than .* simpler pattern"):
            workspace.grep("(a|aa)+$")
    finally:
        cpu = time.thread_time() - cpu  # this thread's own work: a loaded machine adds none
        stop.set()
        thread.join()
    spent = time.monotonic() - started
    assert cpu < GREP_TIMEOUT_S * 3  # stopped by its limit, not after the 2**28 steps
    # With the GIL held the other thread would tick about once; released, ~100 times a second.
    assert ticks > spent * 20


# --- deleting is the admin's -------------------------------------------------------------------

EVE = User("eve", "editor")
UNDO_ONLY = "may delete only a knowledge base they created that never held a document"


def test_an_editor_may_delete_only_their_own_never_filled_knowledge_base(svc, tmp_path) -> None:  # noqa: ANN001
    svc.users.add(EVE.name, EVE.role, "eve-password")
    ed, eve, alice = svc.as_user(ED), svc.as_user(EVE), svc.as_user(ALICE)
    doc = tmp_path / "team.md"
    doc.write_text("# Team\n\nThe team rotates the on-call weekly.\n", encoding="utf-8")
    ed.kbs.create("team")
    assert ed.builds.add("team", [doc]).ok
    ed.builds.remove("team", "team.md")  # every document removed: still not an editor's to delete
    assert ed.kbs.documents("team") == []
    with pytest.raises(
        AccessError, match=f"ed \\(editor\\) may not delete 'team': an editor {UNDO_ONLY}"
    ):
        ed.kbs.delete("team")
    ed.kbs.create("draft")  # never filled, but not hers: eve may not delete it
    with pytest.raises(AccessError, match=UNDO_ONLY):
        eve.kbs.delete("draft")
    with pytest.raises(AccessError, match=UNDO_ONLY):
        ed.kbs.delete("open")  # never filled, made by the admin
    with pytest.raises(AccessError, match="alice \\(viewer\\) may not delete knowledge bases"):
        alice.kbs.delete("draft")
    ed.kbs.delete("draft")  # an editor's own create, undone
    svc.kbs.delete("team")  # the admin deletes what the editor may not
    assert {kb.name for kb in svc.kbs.all()} == {"open", "secret"}
    deleted = [(e.user, e.target) for e in svc.admin.audit_log() if e.action == "kb.delete"]
    assert deleted == [("local", "team"), ("ed", "draft")]


def test_a_knowledge_base_from_before_creators_were_kept_is_the_admins_to_delete(
    tmp_path: Path,
    embedder,  # noqa: ANN001
) -> None:
    home = tmp_path / "old-home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        service.users.add(ED.name, ED.role, "ed-password")
        service.as_user(ED).kbs.create("empty")  # as an older Zhixing would have kept it:
        db = service._home.catalog.db  # no creator, no memory of documents
        db.execute("DROP TRIGGER documents_fill")
        db.execute("ALTER TABLE knowledge_bases DROP COLUMN created_by")
        db.execute("ALTER TABLE knowledge_bases DROP COLUMN filled")
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        with pytest.raises(AccessError, match=UNDO_ONLY):
            service.as_user(ED).kbs.delete("empty")
        service.as_user(ED).kbs.create("new")  # the migrated catalog keeps creators from now on
        service.as_user(ED).kbs.delete("new")
        service.kbs.delete("empty")
        assert service.kbs.all() == []


def test_every_door_a_name_reaches_says_the_same_of_a_hidden_name_as_of_a_missing_one(
    svc,  # noqa: ANN001
    tmp_path,  # noqa: ANN001
) -> None:
    """ed (an editor, not a member of "secret") names "secret" and names that do not exist
    through every method that takes a knowledge base's name: each refusal is the missing
    name's sentence, word for word, and lists only "open"."""
    from zhixing.cli.retriever import ZhixingRetriever

    ed = svc.as_user(ED)
    doc = tmp_path / "new.md"
    doc.write_text("# New\n\ntext\n", encoding="utf-8")
    doors = {
        "search": lambda n: ed.search.query("vault", [n]),
        "search @name": lambda n: ed.search.query("vault", [f"@{n}"]),
        "search among others": lambda n: ed.search.many(["vault"], ["open", n]),
        "ask": lambda n: ed.search.ask("vault?", [n], max_rounds=1),
        "documents": lambda n: ed.kbs.documents(n),
        "graph stats": lambda n: ed.graph.stats(n),
        "graph view": lambda n: ed.graph.view(n),
        "graph file": lambda n: ed.graph.file(n, "graphml"),
        "neighbourhood": lambda n: ed.graph.neighbourhood(n, "vault"),
        "entity": lambda n: ed.graph.entity(n, 1),
        "members": lambda n: ed.kbs.members(n),
        "export": lambda n: ed.kbs.export_archive(n, tmp_path / "out.zhixing"),
        "add": lambda n: ed.builds.add(n, [doc]),
        "background build": lambda n: ed.builds.start(n, [("new.md", b"# New\n\ntext\n")]),
        "estimate": lambda n: ed.builds.estimate(n, [doc]),
        "remove": lambda n: ed.builds.remove(n, "secret.md"),
        "delete": lambda n: ed.kbs.delete(n),
        "resume": lambda n: ed.builds.resume_interrupted(n),
        "build running": lambda n: ed.builds.running(n),
        "notebook scope": lambda n: ed.notebooks.for_kbs([n]),
        "agent context (Studio)": lambda n: ed.search.agent_context([n]),
        "task context (Studio)": lambda n: ed.tasks.context([n]),
        "task": lambda n: ed.tasks.run("audit it", [n]),
        "retriever": lambda n: ZhixingRetriever(service=ed, knowledge_bases=[n]).invoke("vault"),
    }
    hidden = "secret"
    for door, call in doors.items():
        sentences = {}
        for name in (hidden, "nonexistent"):
            with pytest.raises(NotFoundError) as refused:
                call(name)
            sentences[name] = str(refused.value).replace(repr(name), "NAME")
        assert sentences[hidden] == sentences["nonexistent"], door
        assert (
            sentences[hidden]
            == "There is no knowledge base named NAME that ed may see (known: open)."
        ), door
    assert not (tmp_path / "out.zhixing").exists()
    assert [d.source for d in svc.kbs.documents(hidden)] == ["secret.md"]  # nothing happened to it
    assert not svc.builds.jobs()
