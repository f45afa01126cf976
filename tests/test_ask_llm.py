"""`ask` end to end with an LLM: real Milvus Lite and SQLite, ChatOpenAI against the fake server.

The cost contract of docs/architecture.md §6: a round costs two calls on its critical path (plan or refine,
then evaluate), because the queries plan and refine write carry the search's rewrites; a forced
3-round ask costs seven calls with the answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import built_home
from tests.fake_openai import FakeOpenAI, _prompt_text, _schema_of
from zhixing.core.config import Settings
from zhixing.core.llm.client import LLMClient
from zhixing.core.service import KnowledgeService

DOCS = {
    "passwords.md": "# Password storage\n\nPasswords are stored with bcrypt or argon2id, "
    "never in plain text, with a per-user salt.\n",
    "sessions.md": "# Session management\n\nIdle sessions expire after 15 minutes; the session "
    "identifier is rotated at login to prevent session fixation.\n",
    "logging.md": "# Logging\n\nSecurity events are logged without secrets; tokens and "
    "passwords are masked before they reach the log.\n",
    "tokens.md": "# API tokens\n\nAPI tokens are scoped to one service and rotated every 90 "
    "days; a leaked token is revoked at once.\n",
}
REFINED = ["masking secrets in the security log", "rotating and revoking API tokens"]


class ThreeRounds:
    """Scripts the roles; the judge finds the evidence insufficient until the third round."""

    def __init__(self) -> None:
        self.schemas: list[str] = []
        self.verdicts = 0
        self.refined = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        name, _ = _schema_of(body)
        self.schemas.append(name)
        if name == "AgentPlan":
            return {
                "aspects": ["password storage", "session expiry"],
                "keywords": ["bcrypt", "argon2id", "idle timeout"],
                "queries": [
                    {"query": "password hashing", "keywords": ["bcrypt", "salt"]},
                    {"query": "session expiry", "hypothetical_answer": "after 15 minutes idle"},
                ],
            }
        if name == "EvidenceVerdict":
            self.verdicts += 1
            if self.verdicts < 3:
                return {"sufficient": False, "missing": ["session expiry"], "covered": []}
            return {"sufficient": True, "missing": [], "covered": ["password storage"]}
        if name == "RefinedQueries":
            self.refined += 1
            return {"queries": [{"query": REFINED[self.refined - 1], "keywords": ["secret"]}]}
        if name == "GroundedAnswer":
            cited = 1 if "[1]" in _prompt_text(body) else 0
            return {"found": bool(cited), "answer": "Use bcrypt [1].", "cited": [cited]}
        raise AssertionError(f"unexpected LLM call for {name}")


@pytest.fixture
def home(tmp_path: Path, embedder) -> Path:  # noqa: ANN001
    return built_home(tmp_path, embedder, "sec", DOCS)


def test_a_forced_three_round_ask_costs_seven_calls_and_no_rewrite_call(home, embedder) -> None:  # noqa: ANN001
    model = ThreeRounds()
    with FakeOpenAI(responder=model) as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        # No LLM cache: a verdict on unchanged evidence would be served from it, not the wire.
        llm = LLMClient(settings, None, timeout_s=5.0, backoff_s=0.01)
        with KnowledgeService(settings, embedder=embedder, llm=llm) as svc:
            result = svc.search.ask(
                "How are passwords stored and when do sessions expire?", ["sec"], top_k=1
            )
    assert model.schemas == [
        "AgentPlan", "EvidenceVerdict",
        "RefinedQueries", "EvidenceVerdict",
        "RefinedQueries", "EvidenceVerdict",
        "GroundedAnswer",
    ]  # fmt: skip
    assert [r["queries"] for r in result.rounds[1:]] == [[q] for q in REFINED]
    assert result.answer.found
    assert result.answer.citations[0].document in DOCS


def test_a_plain_search_with_an_llm_makes_its_one_rewrite_call(home, embedder) -> None:  # noqa: ANN001
    with FakeOpenAI() as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        with KnowledgeService(settings, embedder=embedder) as svc:
            hits = svc.search.query("session fixation", ["sec"])
        assert [_schema_of(b)[0] for b in fake.bodies()] == ["QueryRewrites"]
    assert hits[0].document == "sessions.md"
