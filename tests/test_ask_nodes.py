"""The agentic loop's nodes and routers, called directly with fake dependencies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from langgraph.runtime import Runtime

from tests.fakes import ScriptedLLM
from zhixing.core.ask import answering, judge, nodes
from zhixing.core.ask.configuration import AgentContext
from zhixing.core.ask.flow import route_after_evaluate, route_after_refine
from zhixing.core.ask.state import Evidence, Query, keep_best_evidence
from zhixing.core.errors import ConfigError, LLMError
from zhixing.core.llm.protocol import LLM
from zhixing.core.models import Hit


@dataclass
class FakeAnswer:
    """Stands in for core.answer.Answer: the same fields and to_json shape."""

    answer: str
    found: bool
    citations: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"answer": self.answer, "found": self.found, "citations": list(self.citations)}


@dataclass
class FakeAnswerer:
    calls: list[tuple[str, list[Hit], list[str]]] = field(default_factory=list)

    def __call__(self, question: str, hits: Sequence[Hit], aspects: Sequence[str]) -> FakeAnswer:
        self.calls.append((question, list(hits), list(aspects)))
        citations = tuple(
            {"n": n, "chunk_id": h.chunk_id, "document": h.document, "page": h.page, "text": h.text}
            for n, h in enumerate(hits, start=1)
        )
        return FakeAnswer(f"{len(hits)} excerpts", bool(hits), citations)


def hit(chunk_id: int, text: str, **strategies: int) -> Hit:
    return Hit(chunk_id, 0.5, f"doc{chunk_id}.md", "Doc", 1, text, strategies or {"basic": 1})


def runtime(events: list[dict[str, Any]], **overrides: Any) -> Runtime[AgentContext]:
    values: dict[str, Any] = {"retrieve": lambda qs, rw: [[] for _ in qs], "answer": FakeAnswerer()}
    values.update(overrides)
    return Runtime(context=AgentContext(**values), stream_writer=events.append)


QUESTION = "What are the password storage and session timeout requirements?"
A, B = "What are the password storage", "session timeout requirements"
TERMS = {A: ["password", "storage"], B: ["session", "timeout", "requirements"]}
PASSWORD = hit(1, "Password storage must use bcrypt or argon2.", basic=1, keyword=2)
SESSION = hit(2, "Session timeout requirements: idle sessions expire after 15 minutes.")


def test_plan_splits_the_question_into_aspects_and_asks_the_question_first() -> None:
    events: list[dict[str, Any]] = []
    update = nodes.plan({"question": QUESTION}, runtime(events, max_rounds=4))
    assert update["aspects"] == [A, B]
    assert [q.text for q in update["queries"]] == [QUESTION, A, B]
    assert update["terms"] == TERMS
    assert (update["round"], update["max_rounds"]) == (1, 4)
    assert events == [
        {"node": "plan", "round": 1, "aspects": [A, B], "queries": [QUESTION, A, B], "llm": False}
    ]


def test_plan_keeps_a_simple_question_as_one_aspect_and_one_query() -> None:
    update = nodes.plan({"question": "What is CSRF?"}, runtime([]))
    assert update["aspects"] == ["What is CSRF?"]
    assert update["queries"] == [Query("What is CSRF?")]


def test_plan_splits_a_chinese_enumeration_with_jieba_terms() -> None:
    update = nodes.plan({"question": "密码存储和会话超时有哪些要求？"}, runtime([]))
    assert len(update["aspects"]) == 2
    assert "密码" in update["terms"][update["aspects"][0]]
    assert "会话" in update["terms"][update["aspects"][1]]


def test_retrieve_counts_hits_per_strategy_and_votes_for_every_find() -> None:
    events: list[dict[str, Any]] = []
    known = {1: Evidence(PASSWORD, A, A, 1, 1)}
    results = [[PASSWORD, SESSION], [SESSION]]
    state = {
        "round": 2,
        "aspects": [A, B],
        "terms": TERMS,
        "queries": [Query("q one", ""), Query("q two", B)],
        "evidence": known,
    }
    update = nodes.retrieve(state, runtime(events, retrieve=lambda qs, rw: results))
    assert update["asked"] == ["q one", "q two"]
    # Chunk 1 was known; found again it is passed on for its vote (the reducer adds it up).
    assert set(update["evidence"]) == {1, 2}
    session = update["evidence"][2]
    assert (session.rank, session.query, session.aspect, session.round) == (1, "q two", B, 2)
    # Two queries of the round found chunk 2; each votes as a supporting query (round 2).
    assert (session.direct, session.support) == (0.0, pytest.approx(1 / 62 + 1 / 61))
    merged = keep_best_evidence(known, update["evidence"])
    assert merged[1].rank == 1 and merged[1].query == A  # the earlier, better find is kept
    [event] = events
    assert event["hits_by_strategy"] == {"basic": 3, "keyword": 1}
    assert event["per_query"][0]["hits_by_strategy"] == {"basic": 2, "keyword": 1}
    assert (event["new_evidence"], event["evidence"], event["round"]) == (1, 2, 2)


def test_retrieve_keeps_only_each_querys_top_hits_as_evidence() -> None:
    many = [hit(i, f"text {i}") for i in range(1, 8)]
    state = {"round": 1, "aspects": [A], "terms": {}, "queries": [Query("q")]}
    ctx = runtime([], retrieve=lambda qs, rw: [many], evidence_per_round=3)
    assert sorted(nodes.retrieve(state, ctx)["evidence"]) == [1, 2, 3]


def test_the_evidence_reducer_dedupes_by_chunk_keeps_the_best_rank_and_adds_the_votes() -> None:
    early = Evidence(PASSWORD, A, "first", 1, 4, direct=0.25)
    better = Evidence(PASSWORD, B, "second", 2, 1, support=0.5)
    worse = Evidence(PASSWORD, B, "third", 3, 9, support=0.125)
    assert keep_best_evidence({1: early}, {1: better}) == {
        1: replace(better, direct=0.25, support=0.5)
    }
    assert keep_best_evidence({1: early}, {1: worse}) == {1: replace(early, support=0.125)}


def test_evaluate_offline_covers_an_aspect_when_half_its_terms_appear() -> None:
    events: list[dict[str, Any]] = []
    state = {
        "round": 1,
        "aspects": [A, B],
        "terms": TERMS,
        "evidence": {1: Evidence(PASSWORD, A, A, 1, 1)},
    }
    update = judge.evaluate(state, runtime(events))
    assert update["sufficient"] is False
    assert (update["covered"], update["missing"]) == ([A], [B])
    assert update["gaps"] == {B: ["session", "timeout", "requirements"]}
    assert events[0] == {
        "node": "evaluate",
        "round": 1,
        "sufficient": False,
        "covered": [A],
        "missing": [B],
        "judge": "coverage",
    }


def test_evaluate_offline_is_sufficient_when_every_aspect_is_covered() -> None:
    evidence = {1: Evidence(PASSWORD, A, A, 1, 1), 2: Evidence(SESSION, B, B, 1, 1)}
    state = {"round": 1, "aspects": [A, B], "terms": TERMS, "evidence": evidence}
    update = judge.evaluate(state, runtime([]))
    assert (update["sufficient"], update["missing"]) == (True, [])


def test_refine_offline_uses_uncovered_terms_and_neighbours_but_never_repeats_a_query() -> None:
    events: list[dict[str, Any]] = []
    state = {
        "question": QUESTION,
        "round": 1,
        "missing": [B],
        "gaps": {B: ["session", "timeout"]},
        "asked": [QUESTION, A, "SESSION  timeout Requirements?"],
    }
    update = nodes.refine(state, runtime(events, neighbours=lambda terms: ["idle expiry"]))
    texts = [q.text for q in update["queries"]]
    assert texts == ["session timeout", "session timeout idle expiry", "idle expiry"]
    assert all(q.aspect == B for q in update["queries"])
    assert update["round"] == 2
    assert events[0]["node"] == "refine" and events[0]["queries"] == texts


# --- with a model (scripted in this process: tests/fakes.py) --------------------------------------


def test_a_scripted_model_is_an_llm_the_nodes_accept() -> None:
    assert isinstance(ScriptedLLM({}), LLM)


def test_plan_with_a_model_takes_its_aspects_and_queries_with_their_rewrites() -> None:
    model = ScriptedLLM(
        {
            "plan": {
                "question": QUESTION,
                "aspects": ["password storage", "session timeout"],
                "hypothetical_answer": "Passwords are hashed; sessions expire.",
                "queries": [
                    {"query": "password hashing", "hypothetical_answer": "bcrypt"},
                    "session idle timeout",
                ],
            }
        }
    )
    events: list[dict[str, Any]] = []
    update = nodes.plan({"question": QUESTION}, runtime(events, llm=model))
    assert update["aspects"] == ["password storage", "session timeout"]
    assert [q.text for q in update["queries"]] == [
        QUESTION,
        "password hashing",
        "session idle timeout",
    ]
    assert update["queries"][1].rewrites is not None  # searching it calls no model again
    assert events[0]["llm"] is True and model.asked("plan")[0]["question"] == QUESTION


def test_evaluate_with_a_model_maps_respelled_aspects_back_to_the_planned_ones() -> None:
    model = ScriptedLLM(
        {"evaluate": {"sufficient": False, "covered": ["PASSWORD STORAGE"], "missing": ["timeout"]}}
    )
    state = {
        "question": QUESTION,
        "round": 1,
        "aspects": [A, B],
        "terms": TERMS,
        "evidence": {1: Evidence(PASSWORD, A, A, 1, 1)},
    }
    events: list[dict[str, Any]] = []
    update = judge.evaluate(state, runtime(events, llm=model))
    assert (update["covered"], update["missing"]) == ([A], [B])
    assert events[0]["judge"] == "llm"
    assert "Password storage must use bcrypt" in str(model.asked("evaluate")[0]["evidence"])


def test_a_failing_model_degrades_the_step_to_the_offline_rule_and_keeps_going() -> None:
    model = ScriptedLLM({"refine": LLMError("the endpoint answered 500 three times")})
    state = {
        "question": QUESTION,
        "round": 1,
        "missing": [B],
        "gaps": {B: ["session", "timeout"]},
        "asked": [QUESTION],
    }
    events: list[dict[str, Any]] = []
    update = nodes.refine(state, runtime(events, llm=model))
    assert [q.text for q in update["queries"]][:2] == [B, "session timeout"]  # the offline rule
    assert events[0]["llm"] is False and len(model.asked("refine")) == 1


def test_refine_returns_no_query_when_every_candidate_was_asked() -> None:
    state = {"question": QUESTION, "round": 2, "missing": [B], "gaps": {B: []}, "asked": [B]}
    update = nodes.refine(state, runtime([]))
    assert update == {"queries": []}


def test_merge_ranks_evidence_by_votes_and_caps_each_aspect() -> None:
    votes = {1: 0.9, 2: 0.8, 3: 0.7, 4: 0.6, 5: 0.95}
    evidence = {
        i: Evidence(hit(i, f"t{i}"), A if i <= 3 else B, "q", 1, i, direct=votes[i])
        for i in range(1, 6)
    }
    events: list[dict[str, Any]] = []
    ctx = runtime(events, evidence_per_round=2)
    update = answering.merge({"round": 2, "aspects": [A, B], "evidence": evidence}, ctx)
    assert [h.chunk_id for h in update["merged"]] == [5, 1, 2, 4]  # 3 is A's third
    assert events[0]["by_aspect"] == {A: 2, B: 2}


def test_the_rounds_add_evidence_after_the_questions_own_hits_and_never_reorder_them() -> None:
    """Round 1 finds 1..5 for the question (and 7 for an aspect); round 2's two refinements
    find 9 first and then 3, and 8 then 9. The question's order stands, 3 included; of what
    only the other queries found, 9 (found twice) comes before 7 and 8 (found once each)."""
    first = [hit(i, f"t{i}") for i in range(1, 6)]
    state: dict[str, Any] = {
        "round": 1,
        "aspects": [A, B],
        "terms": {},
        "queries": [Query("q"), Query("aspect", B)],
    }
    one = nodes.retrieve(state, runtime([], retrieve=lambda qs, rw: [first, [hit(7, "t7")]]))
    state = {
        **state,
        "round": 2,
        "queries": [Query("refined", A), Query("again", A)],
        "evidence": one["evidence"],
    }
    found = [[hit(9, "t9"), hit(3, "t3")], [hit(8, "t8"), hit(9, "t9")]]
    two = nodes.retrieve(state, runtime([], retrieve=lambda qs, rw: found))["evidence"]
    pooled = keep_best_evidence(one["evidence"], two)
    merged = answering.merge({"round": 2, "aspects": [A, B], "evidence": pooled}, runtime([]))
    assert [h.chunk_id for h in merged["merged"]] == [1, 2, 3, 4, 5, 9, 7, 8]


def test_answer_passes_question_merged_evidence_and_aspects_to_the_answerer() -> None:
    answerer = FakeAnswerer()
    state = {"question": QUESTION, "round": 1, "aspects": [A, B], "merged": [PASSWORD]}
    update = answering.answer(state, runtime([], answer=answerer))
    assert answerer.calls == [(QUESTION, [PASSWORD], [A, B])]
    assert update["answer"].found is True


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"sufficient": True, "round": 1, "max_rounds": 3}, "merge"),
        ({"sufficient": False, "round": 1, "max_rounds": 3}, "refine"),
        ({"sufficient": False, "round": 2, "max_rounds": 3}, "refine"),
        ({"sufficient": False, "round": 3, "max_rounds": 3}, "merge"),
        ({"sufficient": False, "round": 1, "max_rounds": 1}, "merge"),
    ],
)
def test_route_after_evaluate(state: dict[str, Any], expected: str) -> None:
    assert route_after_evaluate(state) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("queries", "expected"), [([Query("new")], "retrieve"), ([], "merge"), (None, "merge")]
)
def test_route_after_refine(queries: list[Query] | None, expected: str) -> None:
    state = {} if queries is None else {"queries": queries}
    assert route_after_refine(state) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "field_values", [{"max_rounds": 0}, {"max_rounds": 6}, {"evidence_per_round": 0}]
)
def test_the_context_rejects_out_of_range_settings(field_values: dict[str, int]) -> None:
    with pytest.raises(ConfigError, match="must be"):
        AgentContext(retrieve=lambda qs, rw: [], answer=FakeAnswerer(), **field_values)


def test_queries_compare_without_case_space_or_end_punctuation() -> None:
    assert nodes.normalize_query("  SQL   Injection？ ") == nodes.normalize_query("sql injection")
