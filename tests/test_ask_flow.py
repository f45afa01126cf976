"""The agentic graph end to end: offline with a scripted retriever, and through the fake OpenAI."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, _schema_of
from tests.test_ask_nodes import PASSWORD, QUESTION, SESSION, FakeAnswerer, hit
from zhixing.core.ask import AgentContext, build_graph, run_agentic
from zhixing.core.ask.nodes import normalize_query
from zhixing.core.config import Settings
from zhixing.core.llm.client import LLMClient
from zhixing.core.models import Hit

NOISE = hit(3, "Logging must record authentication failures.", keyword=1)


def scripted_retrieve(calls: list[list[str]], rewrites: list[list[Any]] | None = None):
    """Round 1 finds passwords only; a query naming idle expiry finds the session evidence."""

    def retrieve(queries: list[str], given: list[Any]) -> list[list[Hit]]:
        calls.append(list(queries))
        if rewrites is not None:
            rewrites.append(list(given))
        return [[SESSION, PASSWORD] if "idle" in q.lower() else [PASSWORD, NOISE] for q in queries]

    return retrieve


def nodes_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["node"] for e in events]


def test_the_graph_wires_the_six_nodes() -> None:
    names = set(build_graph().get_graph().nodes) - {"__start__", "__end__"}
    assert names == {"plan", "retrieve", "evaluate", "refine", "merge", "answer"}


def test_an_offline_run_refines_the_missing_aspect_and_dedupes_evidence() -> None:
    calls: list[list[str]] = []
    live: list[dict[str, Any]] = []
    answerer = FakeAnswerer()
    ctx = AgentContext(
        retrieve=scripted_retrieve(calls),
        answer=answerer,
        neighbours=lambda terms: ["idle session expiry"],
    )
    result = run_agentic(QUESTION, ctx, on_event=live.append)
    assert nodes_of(live) == [
        "plan", "retrieve", "evaluate", "refine", "retrieve", "evaluate", "merge", "answer"
    ]  # fmt: skip
    assert live == result.events
    asked = [normalize_query(q) for round_ in calls for q in round_]
    assert len(asked) == len(set(asked))  # never the same query twice
    assert any("idle session expiry" in q for q in calls[1])
    assert [r["sufficient"] for r in result.rounds] == [False, True]
    assert result.rounds[0]["missing"] == ["session timeout requirements"]
    assert result.rounds[1]["new_evidence"] == 1  # the password chunk came back, not counted
    ids = [h.chunk_id for h in result.evidence]
    assert sorted(ids) == [1, 2, 3] and len(ids) == len(set(ids))
    [(question, hits, aspects)] = answerer.calls
    assert question == QUESTION and hits == result.evidence and aspects == result.aspects


def test_events_reach_the_callback_while_the_run_is_in_progress() -> None:
    seen_at_retrieve: list[list[str]] = []
    live: list[dict[str, Any]] = []

    def retrieve(queries: list[str], given: list[Any]) -> list[list[Hit]]:
        seen_at_retrieve.append(nodes_of(live))
        return [[PASSWORD] for _ in queries]

    run_agentic("What is password storage?", AgentContext(retrieve, FakeAnswerer()), live.append)
    assert seen_at_retrieve[0] == ["plan"]


@pytest.mark.parametrize("max_rounds", [1, 2, 3])
def test_max_rounds_stops_a_loop_that_never_covers_its_aspects(max_rounds: int) -> None:
    fresh_names = (f"alias{n}" for n in itertools.count())
    ctx = AgentContext(
        retrieve=lambda qs, rw: [[NOISE] for _ in qs],
        answer=FakeAnswerer(),
        neighbours=lambda terms: [next(fresh_names)],
        max_rounds=max_rounds,
    )
    result = run_agentic(QUESTION, ctx)
    assert [r["round"] for r in result.rounds] == list(range(1, max_rounds + 1))
    assert nodes_of(result.events).count("refine") == max_rounds - 1
    assert nodes_of(result.events)[-2:] == ["merge", "answer"]


def test_a_run_with_nothing_left_to_ask_answers_before_max_rounds() -> None:
    ctx = AgentContext(
        retrieve=lambda qs, rw: [[] for _ in qs], answer=FakeAnswerer(), max_rounds=5
    )
    result = run_agentic("What is CSRF?", ctx)
    assert len(result.rounds) < 5
    assert nodes_of(result.events)[-3:] == ["refine", "merge", "answer"]
    assert result.to_json()["found"] is False


def test_to_json_has_exactly_the_ask_json_shape() -> None:
    ctx = AgentContext(retrieve=scripted_retrieve([]), answer=FakeAnswerer())
    out = run_agentic("What is password storage?", ctx).to_json()
    assert list(out) == ["answer", "found", "citations", "method", "note", "rounds"]
    assert list(out["citations"][0]) == ["n", "chunk_id", "document", "page", "text"]
    assert out["rounds"] == [
        {
            "round": 1,
            "queries": ["What is password storage?"],
            "hits_by_strategy": {"basic": 1, "keyword": 2},
            "new_evidence": 2,
            "sufficient": True,
            "missing": [],
        }
    ]


# --- through the fake OpenAI server ------------------------------------------------------------

ASPECTS = ["password storage", "session timeout"]


class ScriptedModel:
    """Answers the three agentic roles; the first verdict misses session timeout."""

    def __init__(self) -> None:
        self.verdicts = 0
        self.refine_reply = ["idle session expiry"]

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        name, _ = _schema_of(body)
        if name == "AgentPlan":
            return {"aspects": ASPECTS, "queries": ["password hashing", "session timeout policy"]}
        if name == "RefinedQueries":
            return {"queries": self.refine_reply}
        assert name == "EvidenceVerdict", name
        self.verdicts += 1
        if self.verdicts == 1:
            return {"sufficient": False, "missing": ["session timeout"], "covered": ASPECTS[:1]}
        return {"sufficient": True, "missing": [], "covered": ASPECTS}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def fake(model: ScriptedModel) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=model) as server:
        yield server


def client(fake: FakeOpenAI) -> LLMClient:
    settings = Settings(
        openai_base_url=fake.url, openai_api_key="sk-test", chat_model="chat", fast_model="fast"
    )
    return LLMClient(settings, None, timeout_s=2.0, backoff_s=0.01)


def test_an_llm_run_refines_the_missing_aspect_in_two_calls_per_round(fake: FakeOpenAI) -> None:
    calls: list[list[str]] = []
    chats_at_verdict: list[int] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["node"] == "evaluate":
            chats_at_verdict.append(fake.chat_count)

    ctx = AgentContext(retrieve=scripted_retrieve(calls), answer=FakeAnswerer(), llm=client(fake))
    result = run_agentic(QUESTION, ctx, on_event)
    assert nodes_of(result.events) == [
        "plan", "retrieve", "evaluate", "refine", "retrieve", "evaluate", "merge", "answer"
    ]  # fmt: skip
    assert result.aspects == ASPECTS
    assert calls[0] == [QUESTION, "password hashing", "session timeout policy"]
    assert calls[1] == ["idle session expiry"]
    assert [r["missing"] for r in result.rounds] == [["session timeout"], []]
    assert chats_at_verdict == [2, 4]  # plan + judge, then refine + judge
    models = [body["model"] for body in fake.bodies()]
    assert models == ["fast", "chat", "fast", "chat"]
    assert sorted(h.chunk_id for h in result.evidence) == [1, 2, 3]


def test_an_llm_refiner_that_repeats_a_query_falls_back_to_new_terms(
    fake: FakeOpenAI, model: ScriptedModel
) -> None:
    model.refine_reply = ["Password Hashing", "session timeout policy"]  # both sent in round 1
    calls: list[list[str]] = []
    ctx = AgentContext(retrieve=scripted_retrieve(calls), answer=FakeAnswerer(), llm=client(fake))
    result = run_agentic(QUESTION, ctx)
    asked = [normalize_query(q) for round_ in calls for q in round_]
    assert len(calls) >= 2 and len(asked) == len(set(asked))
    assert fake.chat_count == 2 * len(result.rounds)


def test_an_unreachable_llm_degrades_each_step_to_the_offline_heuristics() -> None:
    with FakeOpenAI() as server:
        llm = client(server)
    ctx = AgentContext(retrieve=scripted_retrieve([]), answer=FakeAnswerer(), llm=llm)
    result = run_agentic("What is password storage?", ctx)
    assert [e.get("judge") for e in result.events if e["node"] == "evaluate"] == ["coverage"]
    assert result.to_json()["found"] is True


def test_the_queries_plan_and_refine_write_carry_the_rewrites_search_needs(
    fake: FakeOpenAI, model: ScriptedModel
) -> None:
    """So searching them makes no rewrite call: a round is plan/refine + evaluate, two calls."""
    plan_reply = {
        "aspects": ASPECTS,
        "hypothetical_answer": "Hash passwords with bcrypt; expire idle sessions.",
        "keywords": ["bcrypt", "idle timeout"],
        "queries": [
            {"query": "password hashing", "keywords": ["bcrypt", "argon2"]},
            "session timeout policy",
        ],
    }
    original = model.__call__

    def responder(body: dict[str, Any]) -> dict[str, Any]:
        if _schema_of(body)[0] == "AgentPlan":
            return plan_reply
        if _schema_of(body)[0] == "RefinedQueries":
            return {"queries": [{"query": "idle session expiry", "generalization": "sessions"}]}
        return original(body)

    fake.responder = responder
    calls: list[list[str]] = []
    given: list[list[Any]] = []
    ctx = AgentContext(
        retrieve=scripted_retrieve(calls, given), answer=FakeAnswerer(), llm=client(fake)
    )
    run_agentic(QUESTION, ctx)
    whole, hashing, policy = given[0]
    assert whole.keywords == ["bcrypt", "idle timeout"]
    assert whole.hypothetical_answer.startswith("Hash passwords")
    assert whole.sub_questions == ["password hashing", "session timeout policy"]  # the aspects
    assert hashing.keywords == ["bcrypt", "argon2"]
    assert policy is None  # written as a bare string: the search applies its rules, no call
    assert [r.generalization for r in given[1]] == ["sessions"]
    assert fake.chat_count == 4  # plan, evaluate, refine, evaluate: no rewrite call
