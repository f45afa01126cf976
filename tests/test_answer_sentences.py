"""Offline answers of whole sentences (issue 17): the splitter they share with the offline judge
(core/text/sentences.py), and the answers a real search of the shipped sample gives."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from zhixing.core.answer import grounded_answer
from zhixing.core.answer_reply import NOT_FOUND_ZH
from zhixing.core.config import Settings
from zhixing.core.models import Hit
from zhixing.core.service import KnowledgeService
from zhixing.core.text.sentence_cuts import clip
from zhixing.core.text.sentences import is_heading, is_scope, sentences_of

SAMPLES = Path(__file__).resolve().parents[1] / "app" / "samples"
ZH_SAMPLE = (SAMPLES / "java-secure-coding-zh.md").read_text(encoding="utf-8")
_MARKER = re.compile(r"\s*\[\d+\]$")


def texts(text: str, **kwargs: str) -> list[str]:
    return [s.text for s in sentences_of(text, **kwargs)]


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text)


# --- the splitter ------------------------------------------------------------------------------


def test_a_sentence_wrapped_over_two_lines_comes_out_whole() -> None:
    found = texts(ZH_SAMPLE)
    assert "会话 Cookie 设置 HttpOnly、Secure 和 SameSite 属性。" in found
    assert "空闲会话在 15 分钟后失效，绝对有效期不超过 8 小时。" in found
    assert "日志中禁止出现密码、会话标识、令牌和完整的身份证号，这些字段必须脱敏。" in found
    english = texts("Session cookies carry the\nHttpOnly, Secure and SameSite attributes.")
    assert english == ["Session cookies carry the HttpOnly, Secure and SameSite attributes."]


def test_no_heading_of_the_sample_is_a_sentence() -> None:
    headings = {line.lstrip("#").strip() for line in ZH_SAMPLE.splitlines() if line[:1] == "#"}
    found = texts(ZH_SAMPLE)
    assert headings and not headings & set(found)
    assert not [s for s in found if s.startswith(("#", "2 SQL", "4 会话"))]


def test_numbered_titles_without_markdown_are_headings_and_name_the_sentences_below() -> None:
    pdf_like = (
        "3.1 SQL 注入防护\n访问数据库必须使用参数化查询，禁止用字符串\n拼接 SQL 语句。\n"
        "3.2 会话管理\n空闲会话在 15 分钟后失效。\n"
        "V7 日志记录。日志不得记录会话令牌。"
    )
    found = sentences_of(pdf_like)
    assert [(s.heading, s.text) for s in found] == [
        ("3.1 SQL 注入防护", "访问数据库必须使用参数化查询，禁止用字符串拼接 SQL 语句。"),
        ("3.2 会话管理", "空闲会话在 15 分钟后失效。"),
        ("V7 日志记录", "日志不得记录会话令牌。"),
    ]


def test_a_wrapped_line_that_starts_with_a_number_is_not_a_heading() -> None:
    assert texts("密码长度至少为\n12 个字符，最长不限。") == [
        "密码长度至少为 12 个字符，最长不限。"
    ]
    assert not is_heading("12 个字符", before="密码长度至少为")
    assert is_heading(
        "12 密码存储", before="上一节到此结束。", after="密码必须加盐存储，禁止使用明文保存。"
    )


def test_a_short_line_without_punctuation_before_a_block_is_a_title() -> None:
    text = "会话管理\n\n用户登录后必须更换会话标识。\n\n范围\n本规范适用于所有 Java 服务。"
    assert texts(text) == ["用户登录后必须更换会话标识。", "本规范适用于所有 Java 服务。"]
    assert sentences_of(text)[0].heading == "会话管理"


def test_list_items_that_state_something_are_sentences_and_labels_are_not() -> None:
    text = "要求如下：\n\n- 会话管理\n- 禁止使用 MD5 或 SHA-1 存储密码\n-\n1. 注销时服务端必须销毁会话。"
    found = sentences_of(text)
    assert [(s.kind, s.text) for s in found] == [
        ("item", "禁止使用 MD5 或 SHA-1 存储密码"),
        ("item", "注销时服务端必须销毁会话。"),
    ]


def test_a_tables_header_row_is_not_a_sentence_and_its_rows_carry_the_labels() -> None:
    table = (
        "| # | 说明 | L1 | L2 | CWE |\n| :---: | :--- | :---: | :---: | :---: |\n"
        "| **3.2.1** | 验证应用程序在用户身份验证时，生成新的会话令牌。 | ✓ | | 384 |"
    )
    assert texts(table) == [
        "3.2.1 验证应用程序在用户身份验证时，生成新的会话令牌。（L1: ✓ · CWE: 384）"
    ]


def test_code_blocks_and_lead_ins_are_not_sentences() -> None:
    text = (
        "配置示例如下：\n```java\nsession.setMaxInactiveInterval(900);\n```\n会话在 15 分钟后失效。"
    )
    assert texts(text) == ["会话在 15 分钟后失效。"]


def test_sentence_ends_inside_code_spans_and_abbreviations_do_not_cut() -> None:
    text = "Reject names with `a. b` in them, e.g. `../x`. Then log it."
    assert texts(text) == ["Reject names with `a. b` in them, e.g. `../x`.", "Then log it."]


def test_markup_is_balanced_in_every_sentence() -> None:
    found = texts("**注意** 会话必须失效。使用 `#{} 占位符。字段 **加粗 未闭合。")
    assert found == ["**注意** 会话必须失效。", "使用 #{} 占位符。", "字段 加粗 未闭合。"]
    cut = clip("使用 `PreparedStatement` 与 `" + "参数化查询" * 80 + "`。", 60)
    assert cut.endswith("…") and len(cut) <= 60 and cut.count("`") % 2 == 0


def test_each_sentence_knows_where_it_lies_in_the_text() -> None:
    for s in sentences_of(ZH_SAMPLE):
        assert squashed(ZH_SAMPLE[s.start : s.end]) == squashed(s.text)


@pytest.mark.parametrize(
    ("sentence", "scope"),
    [
        ("本文档是知行自带的示例，概括一个团队内部的 Java 安全编码要求。", True),
        ("本标准适用于所有对外提供服务的 Java 应用。", True),
        ("This document describes the secure coding rules of the team.", True),
        ("A sample document shipped with Zhixing: a short English checklist.", True),
        ("范围", True),
        ("本系统的日志文件包含用户名时必须脱敏。", False),
        ("The standard library provides safe encoders.", False),
        ("Idle sessions expire after 15 minutes.", False),
    ],
)
def test_scope_notes_are_told_from_content(sentence: str, scope: bool) -> None:
    assert is_scope(sentence) is scope


# --- answers on the shipped sample, through a real offline search --------------------------------


@pytest.fixture(scope="module")
def sample_service(sample_home: Path, tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[KnowledgeService]:  # fmt: skip
    """The sample knowledge base (tests/conftest.py `sample_home`), copied, opened once."""
    home = tmp_path_factory.mktemp("answers") / "home"
    shutil.copytree(sample_home, home)
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        yield svc


def answer_lines(answer: str) -> list[str]:
    """The cited lines of an answer, without their list marker and [n]."""
    return [
        _MARKER.sub("", line).removeprefix("- ")
        for line in answer.splitlines()
        if _MARKER.search(line)
    ]


def summarize(svc: KnowledgeService, question: str) -> tuple[list[Hit], list[str]]:
    hits = svc.search.query(question, ["kb"], top_k=10)
    answer = grounded_answer(question, hits)
    assert answer.found, question
    return hits, answer_lines(answer.answer)


def test_the_session_timeout_question_gets_the_15_minute_rule(sample_service) -> None:
    _, lines = summarize(sample_service, "会话超时应该设置多久？")
    assert "空闲会话在 15 分钟后失效，绝对有效期不超过 8 小时。" in lines
    assert all(line.endswith("。") for line in lines)  # whole sentences, none cut at a line


def test_the_cookie_attributes_come_as_one_whole_sentence(sample_service) -> None:
    _, lines = summarize(sample_service, "会话 Cookie 需要设置哪些属性？")
    assert "会话 Cookie 设置 HttpOnly、Secure 和 SameSite 属性。" in lines


def test_the_sql_injection_answer_quotes_the_rule_not_the_headings(sample_service) -> None:
    _, lines = summarize(sample_service, "SQL注入如何防护")
    assert "访问数据库必须使用 PreparedStatement 参数化查询，禁止用字符串拼接 SQL 语句。" in lines
    assert not [line for line in lines if re.match(r"^(#|\d+(\.\d+)* )", line)]


def test_sample_answers_keep_their_markup_balanced(sample_service) -> None:
    _, lines = summarize(sample_service, "MyBatis 中允许使用哪种占位符？")
    assert any("`#{}`" in line for line in lines)
    assert all(line.count("`") % 2 == 0 and line.count("**") % 2 == 0 for line in lines)


def test_an_english_question_gets_the_english_sentence(sample_service) -> None:
    _, lines = summarize(sample_service, "How long until idle sessions expire?")
    assert "Idle sessions expire after 15 minutes." in lines


def test_a_citation_carries_its_whole_chunk_and_where_the_cited_sentences_lie(
    sample_service,
) -> None:
    hits = sample_service.search.query("会话超时应该设置多久？", ["kb"], top_k=10)
    answer = grounded_answer("会话超时应该设置多久？", hits)
    first = answer.citations[0]
    hit = next(h for h in hits if h.chunk_id == first.chunk_id)
    assert first.chunk_text == hit.text
    quoted = [first.chunk_text[a:b] for a, b in first.highlights]
    assert squashed("".join(quoted)) == squashed(first.text)
    assert set(answer.to_json()["citations"][0]) >= {"chunk_id", "text", "chunk_text", "highlights"}


def test_aspect_labels_open_a_paragraph_and_never_double_the_punctuation(sample_service) -> None:
    question = "密码存储和日志保存有哪些要求？"
    hits = sample_service.search.query(question, ["kb"], top_k=10)
    answer = grounded_answer(
        question, hits, aspects=["密码存储有哪些要求？", "日志保存有哪些要求？"]
    )
    assert answer.answer.startswith("密码存储有哪些要求：\n- ")
    assert "\n\n日志保存有哪些要求：\n- " in answer.answer
    assert not re.search(r"[？?。][：:]", answer.answer)


def test_a_single_aspect_answer_has_no_label(sample_service) -> None:
    question = "会话超时应该设置多久？"
    hits = sample_service.search.query(question, ["kb"], top_k=10)
    answer = grounded_answer(question, hits, aspects=[question])
    assert answer.answer.startswith("- ") and question not in answer.answer
    assert answer.answer != NOT_FOUND_ZH
