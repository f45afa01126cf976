"""The agent page (智能体), driven by AppTest on a real home built from the shipped samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import open_page, say

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "密码存储和文件上传有什么要求？"  # offline: file uploads take a second round


@pytest.fixture
def home(sample_home, app_home):
    """A copy of the built sample home, for the app."""
    shutil.copytree(sample_home, app_home)
    return app_home


def _rounds(at: AppTest) -> list:
    return [s for s in at.status if s.label.startswith("第 ")]


def test_a_question_renders_each_round_then_the_answer_with_clickable_citations(home):
    at = say(open_page("agent"), f"@kb {QUESTION}")
    rounds = _rounds(at)
    assert [s.label[:5] for s in rounds] == [f"第 {n} 轮" for n in range(1, len(rounds) + 1)]
    assert len(rounds) >= 2  # round 1 misses file uploads, so the loop refines
    assert all(s.state == "complete" and not s.proto.expanded for s in rounds)
    first = " ".join(m.value for m in rounds[0].markdown)
    assert "查询 Queries" in first and "各策略命中" in first and "新证据" in first
    assert "仍缺 Missing" in first and "证据不足" in first
    assistant = at.chat_message[-1]
    assert "bcrypt" in " ".join(m.value for m in assistant.markdown)  # the streamed answer
    citations = [e for e in assistant.expander if e.label.startswith("[1] ")]
    assert citations and "java-secure-coding" in citations[0].label
    assert citations[0].text and citations[0].text[0].value  # the cited chunk's text
    assert not at.warning and not at.error


@pytest.mark.slow
def test_a_reload_shows_the_conversation_so_far_and_new_conversation_hides_it(home):
    say(open_page("agent"), QUESTION)
    say(open_page("agent"), "如何防止会话固定攻击？")
    at = open_page("agent")  # a fresh session on the same home: a reload
    questions = [m.markdown[0].value for m in at.chat_message if m.name == "user"]
    assert questions == [QUESTION, "如何防止会话固定攻击？"]
    assert _rounds(at) and all(not s.proto.expanded for s in _rounds(at))
    at.button(key="agent-new").click().run()
    assert not at.chat_message
    assert not open_page("agent").chat_message  # the marker is stored, not kept in the session


def test_an_unknown_mention_gives_a_warning_and_the_question_is_still_answered(home):
    at = say(open_page("agent"), "@nosuchkb 如何防止会话固定攻击？")
    assert at.warning and "@nosuchkb" in at.warning[0].value and "kb" in at.warning[0].value
    assert _rounds(at)
    assert not at.error
