"""The recall notebook (召回笔记本), driven by AppTest on a real home built from the shipped
samples: cells that run by their mode, persist across a reload, edit and re-run in place, move,
fold and delete."""

from __future__ import annotations

import shutil

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import ask_recall as ask
from tests.pages import open_page, run
from tests.pages import recall_cells as cells
from zhixing.core.answer_reply import NOT_FOUND_ZH

TWO_ASPECTS = "密码存储和文件上传有什么要求？"  # offline: file uploads take a second round


@pytest.fixture
def home(sample_home, app_home):
    """A copy of the built sample home, for the app."""
    shutil.copytree(sample_home, app_home)
    return app_home


def tool(at: AppTest, name: str, index: int):
    """The `name` button (run, edit, up, down, fold, delete) of the index-th cell."""
    return [b for b in at.button if str(b.key).startswith(f"cell-{name}-")][index]


def test_an_answer_cell_cites_and_a_citation_opens_the_whole_chunk_marked(home):
    at = ask(open_page("recall"), "如何防止会话固定攻击？")
    assert cells(at) == ["如何防止会话固定攻击？"]
    labels = [e.label for e in at.expander]
    hits = [label for label in labels if label.startswith("#")]
    assert hits and "java-secure-coding-zh.md" in hits[0] and "basic #" in hits[0]
    citation = next(e for e in at.expander if e.label.startswith("[1] "))
    assert ":orange-background[" in citation.markdown[0].value  # the cited sentence, marked
    answer = " ".join(m.value for m in at.markdown)
    assert "会话" in answer and "[1]" in answer
    assert not at.error


def test_a_search_cell_shows_hits_and_no_answer(home):
    at = ask(open_page("recall"), "密码存储", mode="search")
    assert any(e.label.startswith("#1 ") for e in at.expander)
    assert not any(e.label.startswith("[1] ") for e in at.expander)
    assert not at.info


def test_a_question_the_knowledge_base_cannot_answer_says_exactly_not_found(home):
    at = ask(open_page("recall"), "量子计算机的冷却温度是多少？")
    assert [i.value for i in at.info] == [NOT_FOUND_ZH]
    assert any("不作回答" in c.value for c in at.caption)  # why, above the nearest hits


def test_an_empty_question_gives_a_readable_warning_and_adds_no_cell(home):
    at = ask(open_page("recall"), "  ")
    assert at.warning and "请输入" in at.warning[0].value
    assert not cells(at) and not at.error


def test_an_agentic_cell_shows_each_round_then_the_answer_and_the_evidence(home):
    at = ask(open_page("recall"), TWO_ASPECTS, mode="agentic")
    rounds = [s for s in at.status if s.label.startswith("第 ")]
    assert [s.label[:5] for s in rounds][:2] == ["第 1 轮", "第 2 轮"]
    assert all(s.state == "complete" for s in rounds)
    first = " ".join(m.value for m in rounds[0].markdown)
    assert "查询" in first and "仍缺" in first and "证据不足" in first
    assert any(e.label.startswith("#") for e in at.expander)  # the evidence
    assert any("证据 · " in m.value for m in at.markdown)
    assert not at.error


def test_cells_persist_and_edit_re_run_move_fold_and_delete_in_place(home):
    at = open_page("recall")
    for question, mode in (
        ("密码存储", "search"),
        ("如何防止会话固定攻击？", "answer"),
        ("文件上传", "search"),
    ):
        at = ask(at, question, mode)
    at = open_page("recall")  # a reload: a fresh session on the same home
    assert cells(at) == ["密码存储", "如何防止会话固定攻击？", "文件上传"]
    assert any(e.label.startswith("[1] ") for e in at.expander)  # the stored answer, shown again

    tool(at, "edit", 0).click()
    at = run(at)
    form = next(t for t in at.text_input if str(t.key).startswith("cell-form-"))
    form.input("会话超时应该设置多久？")
    next(b for b in at.button if str(b.key).endswith("-save")).click()
    at = run(at)
    assert cells(at) == ["会话超时应该设置多久？", "如何防止会话固定攻击？", "文件上传"]

    tool(at, "down", 0).click()
    at = run(at)
    assert cells(at) == ["如何防止会话固定攻击？", "会话超时应该设置多久？", "文件上传"]
    tool(at, "delete", 2).click()
    at = run(at)
    tool(at, "fold", 0).click()
    at = run(at)
    at = open_page("recall")
    assert cells(at) == ["如何防止会话固定攻击？", "会话超时应该设置多久？"]
    assert not any(e.label.startswith("[1] ") for e in at.expander)  # the answer cell is folded
    assert not at.error
