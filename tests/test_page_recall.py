"""The recall page (召回), driven by AppTest on a real home built from the shipped samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.answer import NOT_FOUND_ZH
from tests.pages import open_page, run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(sample_home, app_home):
    """A copy of the built sample home, for the app."""
    shutil.copytree(sample_home, app_home)
    return app_home


def _click(at: AppTest, button: str, query: str) -> AppTest:
    at.text_input(key="recall-query").input(query)
    at.button(key=button).click()
    return run(at)


def test_ai_recall_shows_an_answer_with_citations_and_hits_with_their_provenance(home):
    at = _click(open_page("recall"), "recall-ai", "如何防止会话固定攻击？")
    labels = [e.label for e in at.expander]
    hits = [label for label in labels if label.startswith("#")]
    assert hits and "java-secure-coding-zh.md" in hits[0]
    assert "RRF" in hits[0] and "basic #" in hits[0]
    assert any(label.startswith("[1] ") for label in labels)  # the citations
    answer = " ".join(m.value for m in at.markdown)
    assert "会话" in answer and "[1]" in answer
    assert not at.error


def test_a_question_the_knowledge_base_cannot_answer_says_exactly_not_found(home):
    at = _click(open_page("recall"), "recall-ai", "量子计算机的冷却温度是多少？")
    assert [i.value for i in at.info] == [NOT_FOUND_ZH]


def test_an_empty_query_gives_a_readable_warning(home):
    at = _click(open_page("recall"), "recall-ai", "  ")
    assert at.warning and "请输入" in at.warning[0].value
    assert not at.error


def test_agentic_recall_shows_each_round_then_the_answer_and_the_evidence(home):
    at = _click(
        open_page("recall"), "recall-agentic", "bcrypt 的工作因子和会话的空闲超时分别是多少？"
    )
    rounds = [s for s in at.status if s.label.startswith("第 ")]
    assert rounds and rounds[0].label.startswith("第 1 轮")
    assert all(s.state == "complete" for s in rounds)
    inside = " ".join(m.value for m in rounds[0].markdown)
    assert "查询 Queries" in inside and "各策略命中" in inside and "结论 Verdict" in inside
    assert any(e.label.startswith("#") for e in at.expander)  # the evidence
    assert any("证据 Evidence" in s.value for s in at.subheader)
    assert not at.error
