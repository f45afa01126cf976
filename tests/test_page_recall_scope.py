"""The recall notebook keeps what its user chose (issue 33): its scope, the knowledge bases the
notebook is on, across a reload, a page change and a new session, per user; and a question over
the limit gets a sentence that says its length and the limit, instead of nothing."""

from __future__ import annotations

import shutil

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import ask_recall, go, open_page, run, sign_in
from tests.pages import recall_cells as cells
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService


@pytest.fixture
def home(sample_home, app_home):
    """A copy of the built sample home (one knowledge base, "kb"), for the app."""
    shutil.copytree(sample_home, app_home)
    return app_home


def ask(at: AppTest, question: str) -> AppTest:
    return ask_recall(at, question, mode="search")


def choose(at: AppTest, scope: list[str]) -> AppTest:
    at.multiselect(key="recall-scope").set_value(scope)
    return run(at)


def test_a_question_over_the_limit_says_its_length_and_the_limit_and_adds_no_cell(home):
    long = "会话固定攻击如何防范？" * 227 + "密码"  # 2,499 characters, pasted at once
    at = ask(open_page("recall"), long + "。")
    assert [w.value for w in at.warning] == [
        "问题有 2,500 个字符，超过了 2,000 个字符的上限；请删减后再运行。"
    ]
    assert not cells(at) and not at.error
    assert at.text_input(key="recall-query").value == long + "。"  # kept, to be shortened
    at = ask(at, long[:2000])  # at the limit: a cell
    assert cells(at) == [long[:2000]]


def test_the_scope_is_kept_across_a_page_change_and_a_new_session_with_its_cells(home):
    at = choose(open_page("recall"), ["kb"])
    at = ask(at, "密码存储")
    assert cells(at) == ["密码存储"]
    at = go(go(at, "build"), "recall")  # a page change drops the page's widgets
    assert at.multiselect(key="recall-scope").value == ["kb"]
    assert cells(at) == ["密码存储"]
    again = open_page("recall")  # a reload: a new session of the same (local) user
    assert again.multiselect(key="recall-scope").value == ["kb"]
    assert cells(again) == ["密码存储"]
    again = choose(again, ["@all"])
    assert cells(again) == []  # the @all notebook is another one
    assert open_page("recall").multiselect(key="recall-scope").value == ["@all"]


def test_each_user_keeps_their_own_scope(home, monkeypatch, embedder):
    monkeypatch.setenv("ZHIXING_AUTH", "required")
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        for name in ("alice", "bob"):
            svc.users.add(name, "viewer", f"{name}-password")

    def session(name: str) -> AppTest:
        return go(sign_in(open_page(), name, f"{name}-password"), "recall")

    choose(session("alice"), ["kb"])
    assert session("bob").multiselect(key="recall-scope").value == ["@all"]
    assert session("alice").multiselect(key="recall-scope").value == ["kb"]
