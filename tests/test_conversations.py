"""Conversations through the service: each user's own LangGraph threads, follow-up questions
read with the earlier turns (offline and with an LLM), memory that survives a restart and
forgets what its user may no longer see, and task runs that leave nothing staged behind.

Real Milvus Lite and SQLite in temp dirs; the LLM is the HTTP fake that ChatOpenAI talks to.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, _prompt_text, _schema_of
from zhixing.core.agents.memory import is_followup, resolve_followup
from zhixing.core.config import Settings
from zhixing.core.errors import NotFoundError
from zhixing.core.llm.client import LLMClient
from zhixing.core.service import KnowledgeService, User

LEVELS = """# Password rules

## Level 2

At level 2 a password has at least 12 characters and is stored with bcrypt.

## Level 3

At level 3 a password has at least 16 characters and sign-in needs a hardware key.
"""
AUDIT = "# Audit\n\nAudit records of the payment system are kept for seven years.\n"
ALICE, BOB = User("alice", "viewer"), User("bob", "viewer")


@pytest.fixture
def home(tmp_path: Path, embedder) -> Path:  # noqa: ANN001
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "levels.md").write_text(LEVELS, encoding="utf-8")
    (docs / "audit.md").write_text(AUDIT, encoding="utf-8")
    home = tmp_path / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("rules")
        svc.builds.add("rules", [docs / "levels.md"])
        svc.kbs.create("finance")
        svc.builds.add("finance", [docs / "audit.md"])
        svc.users.add("alice", "viewer", "alice-password")
        svc.users.add("bob", "viewer", "bob-password")
    return home


def _plan(result: Any) -> dict[str, Any]:
    return next(e for e in result.events if e["node"] == "plan")


def _cited(result: Any) -> str:
    return " ".join(c.text for c in result.answer.citations)


def test_each_user_sees_only_their_own_conversations(home, embedder) -> None:  # noqa: ANN001
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        alice, bob = svc.as_user(ALICE), svc.as_user(BOB)
        mine = alice.conversations.new()
        alice.search.ask("What does a level 2 password need?", ["rules"], conversation=mine.id)
        theirs = bob.conversations.new()
        assert [c.id for c in alice.conversations.all()] == [mine.id]
        assert [c.id for c in bob.conversations.all()] == [theirs.id]
        with pytest.raises(NotFoundError, match="no such conversation"):
            bob.conversations.turns(mine.id)
        with pytest.raises(NotFoundError, match="no such conversation"):
            bob.search.ask(
                "and for level 3?", ["rules"], conversation=mine.id
            )  # no writing into it
        bob.conversations.new()  # bob's "new conversation" leaves alice's as it was
        turns, hidden = alice.conversations.turns(mine.id)
        assert [t.question for t in turns] == ["What does a level 2 password need?"] and not hidden


@pytest.fixture
def alice(home, embedder):  # noqa: ANN001
    """The service of the built home, acting for alice."""
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        yield svc.as_user(ALICE)


def test_a_follow_up_is_answered_with_the_earlier_turn_offline(alice) -> None:  # noqa: ANN001
    talk = alice.conversations.new()
    alice.search.ask("What does a level 2 password need?", ["rules"], conversation=talk.id)
    follow = alice.search.ask("and for level 3?", ["rules"], conversation=talk.id)
    assert _plan(follow)["resolved"] == "What does a level 3 password need?"
    assert "16 characters" in _cited(follow)
    # The same words with no earlier turn are a question of their own.
    alone = alice.search.ask(
        "and for level 3?", ["rules"], conversation=alice.conversations.new().id
    )
    assert "resolved" not in _plan(alone)
    once = alice.search.ask("and for level 3?", ["rules"])  # no conversation: no memory at all
    assert "resolved" not in _plan(once)


def test_the_memory_survives_a_restart_of_the_service(home, embedder) -> None:  # noqa: ANN001
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        talk = svc.as_user(ALICE).conversations.new()
        svc.as_user(ALICE).search.ask(
            "What does a level 2 password need?", ["rules"], conversation=talk.id
        )
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        follow = svc.as_user(ALICE).search.ask("and for level 3?", ["rules"], conversation=talk.id)
    assert _plan(follow)["resolved"] == "What does a level 3 password need?"


def test_a_user_removed_from_a_knowledge_base_no_longer_sees_answers_that_cite_it(
    home,
    embedder,  # noqa: ANN001
) -> None:
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        alice = svc.as_user(ALICE)
        talk = alice.conversations.new()
        alice.search.ask(
            "How long are payment audit records kept?", ["finance"], conversation=talk.id
        )
        assert "seven years" in str(alice.conversations.turns(talk.id)[0][0].answer)
        svc.kbs.restrict("finance", ["bob"])  # alice is no longer a member
        turns, hidden = alice.conversations.turns(talk.id)
        assert (turns, hidden) == ([], 1)
        # Nor does the thread's memory carry the withheld turn into her next question.
        follow = alice.search.ask("and how long for level 3?", ["rules"], conversation=talk.id)
        assert "payment" not in _plan(follow).get("resolved", "")


class Planner:
    """Scripts the roles; the plan writes the standalone question it is asked for."""

    def __init__(self) -> None:
        self.plan_prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        name, _ = _schema_of(body)
        prompt = _prompt_text(body)
        if name == "AgentPlan":
            self.plan_prompts.append(prompt)
            standalone = "level 3 password rules" if "level 2" in prompt else "level 2 password"
            return {"question": standalone, "aspects": [standalone], "keywords": ["password"]}
        if name == "EvidenceVerdict":
            return {"sufficient": True, "missing": [], "covered": []}
        if name == "GroundedAnswer":
            return {"found": "[1]" in prompt, "answer": "See [1].", "cited": [1]}
        raise AssertionError(f"unexpected LLM call for {name}")


def test_with_an_llm_the_plan_sees_the_earlier_turns_and_writes_the_standalone_question(
    home,
    embedder,  # noqa: ANN001
) -> None:
    model = Planner()
    with FakeOpenAI(responder=model) as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        llm = LLMClient(settings, None, timeout_s=5.0, backoff_s=0.01)
        with KnowledgeService(settings, embedder=embedder, llm=llm) as svc:
            alice = svc.as_user(ALICE)
            talk = alice.conversations.new()
            alice.search.ask("What does a level 2 password need?", ["rules"], conversation=talk.id)
            follow = alice.search.ask("and for level 3?", ["rules"], conversation=talk.id)
    first, second = model.plan_prompts
    assert "(none)" in first and "Q: What does a level 2 password need?" in second
    assert _plan(follow)["resolved"] == "level 3 password rules"
    assert "16 characters" in _cited(follow)


@pytest.mark.parametrize(
    ("question", "turns", "resolved"),
    [
        ("and for level 3?", ["What does level 2 require?"], "What does level 3 require?"),
        ("那三级呢？", ["二级密码有什么要求？"], "三级密码有什么要求？"),
        ("What about sessions?", ["How are passwords stored?"], None),  # added, not replaced
        (
            "How are API tokens rotated?",
            ["How are passwords stored?"],
            "How are API tokens rotated?",
        ),
    ],
)
def test_the_offline_rule_reads_a_follow_up_against_the_last_question(question, turns, resolved):
    got = resolve_followup(question, [{"question": t} for t in turns])
    if resolved is None:
        assert got.startswith(turns[-1]) and "sessions" in got
    else:
        assert got == resolved


def test_a_question_that_stands_alone_is_not_a_follow_up() -> None:
    assert not is_followup("How are API tokens rotated and revoked?")
    assert is_followup("and its length?") and is_followup("那么它的要求呢")


def _archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("src/Login.java", 'String sql = "SELECT * FROM u WHERE n=" + name;\n')
    return buffer.getvalue()


@pytest.mark.parametrize(
    "name", ["../../../../tmp/zx-escape.zip", "/tmp/zx-abs.zip", "a\\..\\b.zip"]
)
def test_an_uploaded_workspace_is_staged_by_a_server_made_name_and_removed_after(
    home,
    embedder,
    name,  # noqa: ANN001
) -> None:
    outside = Path("/tmp") / Path(name.replace("\\", "/")).name
    outside.unlink(missing_ok=True)
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        alice = svc.as_user(ALICE)
        talk = alice.conversations.new()
        result = alice.tasks.run(
            "Audit the project for SQL injection",
            ["rules"],
            upload=(name, _archive()),
            conversation=talk.id,
        )
        [turn], _ = alice.conversations.turns(talk.id)
    assert turn.kind == "task" and turn.answer["report"] == result.report
    assert not outside.exists()
    left = [p for p in (home / "uploads").rglob("*")] + [p for p in (home / "runs").rglob("*")]
    assert left == []  # the staged archive and its unpacked folder went with the run


def test_an_upload_that_is_not_an_archive_is_refused_in_a_sentence(home, embedder) -> None:  # noqa: ANN001
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        with pytest.raises(Exception, match="must be a .zip"):
            svc.tasks.run("Audit it", ["rules"], upload=("notes.txt", b"hello"))
        assert not any((home / "uploads").rglob("*"))


def test_a_follow_up_task_is_researched_with_the_earlier_task(alice) -> None:  # noqa: ANN001
    talk = alice.conversations.new()
    alice.tasks.run("Check the level 2 password rules", ["rules"], conversation=talk.id)
    second = alice.tasks.run("and for level 3?", ["rules"], conversation=talk.id)
    alone = alice.tasks.run("and for level 3?", ["rules"])
    kinds = [t.kind for t in alice.conversations.turns(talk.id)[0]]

    def researched(result: Any) -> str:
        plan = next(e for e in result.events if e["node"] == "plan" and e.get("phase"))
        return plan["queries"][0]

    assert researched(second) == "Check the level 3 password rules"
    assert researched(alone) == "and for level 3?"
    assert kinds == ["task", "task"]
