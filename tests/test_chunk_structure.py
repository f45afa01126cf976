"""heading_of and split_blocks: which lines are headings, and how text divides into blocks."""

from __future__ import annotations

import pytest

from zhixing.core.ingest.structure import heading_of, split_blocks


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("# Title", (1, "Title")),
        ("### 1. Tool Security ###", (3, "1. Tool Security")),
        ("6.2.3.4 身份鉴别", (4, "6.2.3.4 身份鉴别")),
        ("V5.3 输出编码", (2, "V5.3 输出编码")),
        ("V1.1安全软件开发生命周期", (2, "V1.1 安全软件开发生命周期")),
        ("1 范围", (1, "1 范围")),
        ("4 Terms and definitions", (1, "4 Terms and definitions")),
        ("第三章 总则", (1, "第三章 总则")),
        ("第二节 网络安全", (2, "第二节 网络安全")),
        ("第三条 为了规范网络安全等级保护工作，制定本标准。", (3, "第三条")),
        ("8.1.4.2 应对登录的用户进行身份鉴别，身份鉴别信息应具有复杂度要求。", (4, "8.1.4.2")),
        ("附录A：词汇表", (1, "附录A 词汇表")),
        ("附录B（规范性附录） 测试方法", (1, "附录B （规范性附录） 测试方法")),
    ],
)
def test_these_lines_are_headings(line: str, heading: tuple[int, str]) -> None:
    assert heading_of(line, markdown=False) == heading


@pytest.mark.parametrize(
    "line",
    [
        "2021 3 31",
        "3.14 is pi",
        "2.5 million users were affected",
        "4.0版本中的新内容，是对常见弱点列举的全面映",
        "4.0.3版是对4.0版的第三个小补丁，旨在修正拼写错误。",
        "第5条规定，任何人不得",
        "V1 架构、设计和威胁建模.............17",
        "1. An ordered list item",
        "| 1.1.1 | 验证 | ✓ |",
        "Plain sentence that ends with a period.",
    ],
)
def test_these_lines_are_not_headings(line: str) -> None:
    assert heading_of(line, markdown=False) is None


def test_markdown_files_take_only_markdown_headings() -> None:
    assert heading_of("6.2 身份鉴别", markdown=True) is None
    assert heading_of("## 6.2 身份鉴别", markdown=True) == (2, "6.2 身份鉴别")


def test_blocks_follow_headings_paragraphs_tables_code_and_setext_titles() -> None:
    text = (
        "---\ntitle: x\n---\nIntro line\n\nTitle\n=====\npara one\npara two\n"
        "```\n# not heading\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n## Sub\ntext"
    )
    blocks = [(b.kind, b.path, text[b.start : b.end]) for b in split_blocks(text, markdown=True)]
    assert blocks == [
        ("code", (), "---\ntitle: x\n---"),
        ("text", (), "Intro line"),
        ("heading", ("Title",), "Title\n====="),
        ("text", ("Title",), "para one\npara two"),
        ("code", ("Title",), "```\n# not heading\n```"),
        ("table", ("Title",), "| a | b |\n|---|---|\n| 1 | 2 |"),
        ("heading", ("Title", "Sub"), "## Sub"),
        ("text", ("Title", "Sub"), "text"),
    ]


def test_a_shallower_heading_closes_the_deeper_sections() -> None:
    text = "# A\n## A.1\n### A.1.1\n## A.2\n# B"
    paths = [b.path for b in split_blocks(text, markdown=True)]
    assert paths == [("A",), ("A", "A.1"), ("A", "A.1", "A.1.1"), ("A", "A.2"), ("B",)]
