"""Two users on one served app (AppTest sessions in one process share the app's one service,
as the sessions of a served app do): each sees only their own conversations, a follow-up uses
the earlier turn, and the build page shows only jobs of knowledge bases the user may see, with
Cancel only for those who may build."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import write_docs
from tests.pages import go, open_page, run, say, sign_in
from zhixing.core.config import Settings
from zhixing.core.errors import AccessError
from zhixing.core.service import KnowledgeService, User

LEVELS = """# Password rules

## Level 2

At level 2 a password has at least 12 characters and is stored with bcrypt.

## Level 3

At level 3 a password has at least 16 characters and sign-in needs a hardware key.
"""


@pytest.fixture
def served(app_home, monkeypatch, embedder):  # noqa: ANN001
    monkeypatch.setenv("ZHIXING_AUTH", "required")
    docs = write_docs(app_home.parent / "docs", {"levels.md": LEVELS})
    with KnowledgeService(Settings(home=app_home), embedder=embedder) as svc:
        for name, role in {"alice": "viewer", "bob": "viewer", "ed": "editor"}.items():
            svc.users.add(name, role, f"{name}-password")
        svc.kbs.create("rules")
        svc.builds.add("rules", [docs / "levels.md"])
        svc.kbs.create("secret")
        svc.kbs.restrict("secret", ["ed"])
    return docs


def _session(name: str, page: str) -> AppTest:
    return go(sign_in(open_page(), name, f"{name}-password"), page)


def _questions(at: AppTest) -> list[str]:
    return [m.markdown[0].value for m in at.chat_message if m.name == "user"]


@pytest.mark.slow
def test_each_user_sees_only_their_own_conversation_and_a_follow_up_uses_the_earlier_turn(
    served,  # noqa: ANN001
):
    alice = say(_session("alice", "agent"), "@rules What does a level 2 password need?")
    bob = say(_session("bob", "agent"), "@rules How is a password stored?")
    alice = say(alice, "@rules and for level 3?")
    # The follow-up task is researched as the question it stands for with the earlier turn.
    research = " ".join(m.value for m in alice.chat_message[-1].markdown)
    assert "What does a level 3 password need?" in research

    # A reload of each (fresh sessions) replays only that user's own conversation.
    assert _questions(_session("alice", "agent")) == [
        "What does a level 2 password need?",
        "and for level 3?",
    ]
    bob = _session("bob", "agent")
    assert _questions(bob) == ["How is a password stored?"]
    picker = bob.selectbox(key="agent-conversation")
    assert len(picker.options) == 1  # alice's conversation is not even listed

    # Bob's "new conversation" clears his page only.
    bob.button(key="agent-new").click()
    assert _questions(run(bob)) == []
    assert len(_questions(_session("alice", "agent"))) == 2


def _slow_build(docs: Path, n: int = 400) -> list[Path]:
    folder = docs / "many"
    folder.mkdir()
    for i in range(n):
        (folder / f"note-{i:03}.md").write_text(f"# Note {i}\n\nItem {i} of the list.\n")
    return sorted(folder.iterdir())


@pytest.mark.slow
def test_jobs_show_only_to_who_may_see_their_knowledge_base_and_a_viewer_cannot_cancel(
    served,  # noqa: ANN001
):
    from zhixing.app.services import knowledge_service

    shared = knowledge_service()
    ed = shared.as_user(User("ed", "editor"))
    hidden = ed.builds.start("secret", paths=_slow_build(served))
    try:
        alice_page = _session("alice", "build")
        assert "secret" not in str(list(alice_page.main))  # not its name, files nor log
        assert shared.as_user(User("alice", "viewer")).builds.jobs() == []
        ed_page = _session("ed", "build")
        assert f"cancel-{hidden.id}" in {b.key for b in ed_page.button}

        (served / "open").mkdir()
        shown = ed.builds.start("rules", paths=_slow_build(served / "open"))
        alice_page = _session("alice", "build")
        assert "rules" in str(list(alice_page.main))  # she may watch a build she may see
        assert not [b for b in alice_page.button if (b.key or "").startswith("cancel-")]
        with pytest.raises(AccessError, match="may not cancel builds"):
            shared.as_user(User("alice", "viewer")).builds.cancel(shown.id)
        assert ed.builds.job(shown.id).running and not ed.builds.job(shown.id).cancel_requested
    finally:
        for job in ed.builds.jobs():
            ed.builds.cancel(job.id)
        shared._home.jobs.wait_all(120)
