"""HTML embedded in Markdown and text files is parsed, not indexed as tags: tables keep their
merged cells and header context, other blocks become their text, and code is left alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fakes import HashEmbedder
from zhixing.core.config import Settings
from zhixing.core.errors import ParseError
from zhixing.core.ingest import chunk_document, parse_file
from zhixing.core.ingest.tables import Cell, spanned_table
from zhixing.core.service import KnowledgeService

# A standard converted from Word: the control point spans its rows, the level columns sit
# under a header spanning them, and the cells hold the tags Word's converter writes.
STANDARD = """# 网络安全等级保护基本要求

## 8.1.4 安全计算环境

<!-- converted from 基本要求.docx -->
<table>
<thead>
<tr><th rowspan="2">控制点</th><th rowspan="2">要求项</th><th colspan="4">安全要求</th></tr>
<tr><th>第一级</th><th>第二级</th><th>第三级</th><th>第四级</th></tr>
</thead>
<tbody>
<tr>
  <td rowspan="3"><h5>身份鉴别</h5></td>
  <td><p>a) 应对登录的用户进行身份标识和鉴别，身份标识具有<b>唯一性</b>&nbsp;</p></td>
  <td colspan="4">应满足</td>
</tr>

<tr>
  <td>b) 应具有登录失败处理功能；<br/>应配置并启用限制非法登录次数等措施</td>
  <td></td><td colspan="3">应满足</td>
</tr>
<tr>
  <td>c) 应采用口令、密码技术、生物技术等两种或两种以上组合的鉴别技术</td>
  <td></td><td></td><td colspan="2">应满足</td>
</tr>
</tbody>
</table>

<h3>访问控制</h3>
<p>应对登录的用户分配账户和权限。</p>
"""

STANDARD_TABLE = (
    "| 控制点 | 要求项 | 安全要求 / 第一级 | 安全要求 / 第二级 | 安全要求 / 第三级 "
    "| 安全要求 / 第四级 |\n"
    "|---|---|---|---|---|---|\n"
    "| 身份鉴别 | a) 应对登录的用户进行身份标识和鉴别，身份标识具有唯一性 "
    "| 应满足 | 应满足 | 应满足 | 应满足 |\n"
    "| 身份鉴别 | b) 应具有登录失败处理功能； 应配置并启用限制非法登录次数等措施 "
    "|  | 应满足 | 应满足 | 应满足 |\n"
    "| 身份鉴别 | c) 应采用口令、密码技术、生物技术等两种或两种以上组合的鉴别技术 "
    "|  |  | 应满足 | 应满足 |"
)

POLICY = """Password policy
===============

<table border="1">
<tr><th rowspan="2">Control</th><th colspan="2">Requirement</th></tr>
<tr><th>Standard</th><th>Privileged</th></tr>
<tr><td rowspan="2"><b>Lockout</b></td><td>5 failed attempts</td><td>3 failed attempts</td></tr>
<tr><td colspan="2">Unlock by an administrator &amp; log it</td></tr>
</table>
"""

TAG = re.compile(r"</?(?:table|thead|tbody|tr|td|th|h\d|p|b|br|div|span)\b[^>]*>", re.I)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def text_of(tmp_path: Path, name: str, text: str) -> str:
    return parse_file(write(tmp_path / name, text)).pages[0].text


# --- tables ----------------------------------------------------------------------------------


def test_a_table_with_merged_cells_becomes_a_markdown_table_whose_every_row_is_complete(
    tmp_path: Path,
) -> None:
    text = text_of(tmp_path, "standard.md", STANDARD)
    assert STANDARD_TABLE in text
    assert not TAG.search(text) and "<!--" not in text and "&nbsp;" not in text


def test_stacked_header_rows_combine_and_merged_cells_fill_down_and_across(
    tmp_path: Path,
) -> None:
    text = text_of(tmp_path, "policy.md", POLICY)
    assert text.strip().split("\n")[3:] == [
        "| Control | Requirement / Standard | Requirement / Privileged |",
        "|---|---|---|",
        "| Lockout | 5 failed attempts | 3 failed attempts |",
        "| Lockout | Unlock by an administrator & log it | Unlock by an administrator & log it |",
    ]


def test_a_chunk_holding_some_rows_of_a_split_table_repeats_the_combined_header(
    tmp_path: Path,
) -> None:
    doc = parse_file(write(tmp_path / "standard.md", STANDARD))
    header = STANDARD_TABLE.split("\n")[0]
    rows = [
        c for c in chunk_document(doc, max_units=120, overlap_units=0) if "| 身份鉴别 |" in c.text
    ]
    assert len(rows) > 1  # the table was split, and each part still says what its rows are
    assert all(c.text.index(header) < c.text.index("| 身份鉴别 |") for c in rows)
    assert all(c.heading_path[-1] == "8.1.4 安全计算环境" for c in rows)


def test_a_first_row_across_the_whole_table_is_its_title_not_its_header() -> None:
    rows = [
        [Cell("表1 测评对象", cols=2)],
        [Cell("对象", header=True), Cell("说明", header=True)],
        [Cell("主机"), Cell("服务器")],
    ]
    assert spanned_table(rows) == "表1 测评对象\n\n| 对象 | 说明 |\n|---|---|\n| 主机 | 服务器 |"


def test_a_row_spanning_past_the_last_row_and_a_huge_colspan_are_cut_to_the_table() -> None:
    table = spanned_table([[Cell("a", rows=9), Cell("b", cols=10**6)], [Cell("c")]])
    lines = table.split("\n")
    assert lines[2].startswith("| a | c |") and len(lines) == 3
    assert lines[0].count("| b ") == 100  # tables.MAX_SPAN: no row of a million cells


def test_html_files_expand_merged_cells_the_same_way(tmp_path: Path) -> None:
    table = POLICY[POLICY.index("<table") :]
    page = f"<html><head><title>Policy</title></head><body>{table}</body></html>"
    text = text_of(tmp_path, "policy.html", page)
    assert "| Lockout | Unlock by an administrator & log it | Unlock by an administrator" in text


# --- other blocks, inline markup --------------------------------------------------------------


def test_html_headings_become_sections_and_paragraphs_their_text(tmp_path: Path) -> None:
    doc = parse_file(write(tmp_path / "standard.md", STANDARD))
    assert doc.pages[0].text.endswith("### 访问控制\n\n应对登录的用户分配账户和权限。\n")
    last = chunk_document(doc, max_units=120, overlap_units=0)[-1]
    assert last.heading_path[-1] == "访问控制" and not TAG.search(last.text)


def test_inline_tags_comments_and_entities_in_markdown_prose_become_text(tmp_path: Path) -> None:
    text = text_of(
        tmp_path,
        "prose.md",
        "# 说明\n\n口令<b>必须</b>加盐&amp;哈希<!-- 待定 -->存储。<br>第二行\n\n| 项 | 值 |\n"
        "|---|---|\n| 锁定<br/>策略 | 5 <sup>次</sup> |\n",
    )
    assert text == (
        "# 说明\n\n口令必须加盐&哈希存储。\n第二行\n\n| 项 | 值 |\n|---|---|\n| 锁定 策略 | 5 次 |\n"
    )


def test_an_inline_payload_in_prose_stays_text_and_formatting_around_it_goes(
    tmp_path: Path,
) -> None:
    text = text_of(
        tmp_path,
        "payloads.md",
        "# 跨站脚本\n\n<b>示例</b>载荷 <img src=x onerror=alert(1)> 与 "
        '<a href="javascript:alert(2)">链接</a>，以及 <a href="https://example.org">说明</a>。\n',
    )
    assert text == (
        "# 跨站脚本\n\n示例载荷 <img src=x onerror=alert(1)> 与 "
        '<a href="javascript:alert(2)">链接，以及 说明。\n'
    )  # the payload is the opening tag; a closing tag carries nothing


def test_code_keeps_its_markup_fenced_indented_or_inline(tmp_path: Path) -> None:
    source = (
        "# Examples\n\n"
        "```html\n<table><tr><td>cell</td></tr></table>\n<script>alert(1)</script>\n```\n\n"
        "~~~\n<p>tilde fence</p>\n~~~\n\n"
        "    <table><tr><td>indented code</td></tr></table>\n\n"
        "Write `<b>bold</b>` or `&amp;` in `List<String>` code.\n"
    )
    assert text_of(tmp_path, "code.md", source) == source


def test_angle_brackets_that_open_no_known_tag_stay_text(tmp_path: Path) -> None:
    source = (
        "# Types\n\nIf a < b then List<String> and Map<K, V> hold; see <https://example.org>.\n"
    )
    assert text_of(tmp_path, "types.md", source) == source
    text = text_of(tmp_path, "cell.md", "<table><tr><td>x < y and List<String></td></tr></table>\n")
    assert "| x < y and List<String> |" in text


# --- malformed HTML --------------------------------------------------------------------------


def test_a_table_without_its_end_tag_keeps_the_prose_after_it(tmp_path: Path) -> None:
    text = text_of(
        tmp_path,
        "open.md",
        "<table>\n<tr><th>Item</th><th>Value</th></tr>\n\n<tr><td>lockout</td><td>5</td></tr>\n"
        "\nAfter the table, prose goes on.\n\n## Next\n\nMore.\n",
    )
    assert text == (
        "| Item | Value |\n|---|---|\n| lockout | 5 |\n\n"
        "After the table, prose goes on.\n\n## Next\n\nMore.\n"
    )


def test_cells_and_rows_without_end_tags_are_closed_as_a_browser_closes_them(
    tmp_path: Path,
) -> None:
    text = text_of(
        tmp_path,
        "omitted.md",
        "<table>\n<tr><th>Item<th>Value\n<tr><td>lockout<td>5 tries\n"
        "<tr><td>nested<td><table><tr><td>in 1<td>in 2</table>\n</table>\n",
    )
    assert text == ("| Item | Value |\n|---|---|\n| lockout | 5 tries |\n| nested | in 1 in 2 |\n")


def test_text_outside_any_cell_and_an_unclosed_comment_are_kept(tmp_path: Path) -> None:
    text = text_of(
        tmp_path,
        "stray.md",
        "<table><tr><td>cell</td></tr>loose words</table>\n\n<!-- never closed\nstill here\n",
    )
    assert "| cell |" in text and "loose words" in text and "still here" in text


def test_a_markdown_file_of_only_markup_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"^blank\.md has no readable text"):
        parse_file(write(tmp_path / "blank.md", "<!-- draft -->\n<div></div>\n"))


# --- plain text ------------------------------------------------------------------------------


def test_a_text_file_renders_its_embedded_table_and_leaves_other_markup(tmp_path: Path) -> None:
    text = text_of(
        tmp_path,
        "notes.txt",
        "Notes on the form\n\n<p>Use <b>bold</b> for labels.</p>\n\n"
        "<table><tr><th>Field</th><th>Rule</th></tr><tr><td>name</td><td>required</td></tr>"
        "</table>\n",
    )
    assert text == (
        "Notes on the form\n\n<p>Use <b>bold</b> for labels.</p>\n\n"
        "| Field | Rule |\n|---|---|\n| name | required |\n"
    )


# --- end to end ------------------------------------------------------------------------------


def test_a_built_standard_answers_offline_with_requirement_text_and_no_tags(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path / "home", embed_batch=32, parse_workers=1)
    question = "三级系统的身份鉴别有哪些要求？"
    with KnowledgeService(settings, embedder=HashEmbedder()) as service:
        service.kbs.create("标准")
        report = service.builds.add("标准", [write(tmp_path / "基本要求.md", STANDARD)])
        assert report.ok and report.chunks > 0
        hits = service.search.query(question, ["标准"], top_k=5)
        answer = service.search.summarize(question, hits)
    assert hits and not any(TAG.search(hit.text) or "<!--" in hit.text for hit in hits)
    assert answer.found and not TAG.search(answer.answer)
    assert "应对登录的用户进行身份标识和鉴别" in answer.answer or "登录失败处理" in answer.answer
