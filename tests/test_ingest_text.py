"""Parsing text, Markdown, HTML and DOCX files: decoding, structure, titles and errors."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pytest

from zhixing.core.errors import ParseError
from zhixing.core.ingest import parse_file

CHINESE = "信息安全技术\n第一章 总则\n第一条 为了规范网络安全等级保护工作，制定本标准。"


def write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def test_utf8_text_is_one_page_titled_by_its_first_line(tmp_path: Path) -> None:
    doc = parse_file(write(tmp_path / "notes.txt", "Password policy\n\nUse 12 characters."))
    assert (doc.kind, doc.source, doc.title) == ("text", "notes.txt", "Password policy")
    assert [p.number for p in doc.pages] == [1]
    assert doc.pages[0].text == "Password policy\n\nUse 12 characters."


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "gbk", "gb18030", "utf-32"])
def test_chinese_text_in_common_encodings_is_decoded(tmp_path: Path, encoding: str) -> None:
    path = write(tmp_path / "doc.txt", CHINESE.encode(encoding))
    assert parse_file(path).pages[0].text == CHINESE


def test_gbk_text_is_decoded(tmp_path: Path) -> None:
    text = "口令应至少包含12个字符，并定期更换。"
    assert parse_file(write(tmp_path / "gbk.txt", text.encode("gbk"))).pages[0].text == text


def test_big5_text_is_decoded(tmp_path: Path) -> None:
    text = "這是一個測試文件，包含繁體中文。資訊安全管理制度應定期審查。"
    assert parse_file(write(tmp_path / "big5.txt", text.encode("big5"))).pages[0].text == text


def test_windows_1252_text_is_decoded(tmp_path: Path) -> None:
    text = "Café résumé naïve"
    assert parse_file(write(tmp_path / "latin.txt", text.encode("cp1252"))).pages[0].text == text


def test_windows_line_ends_and_a_bom_are_normalized(tmp_path: Path) -> None:
    doc = parse_file(write(tmp_path / "crlf.txt", b"\xef\xbb\xbfone\r\ntwo\rthree\r\n"))
    assert doc.pages[0].text == "one\ntwo\nthree\n"


def test_markdown_title_comes_from_front_matter_or_first_heading(tmp_path: Path) -> None:
    fenced = "```bash\n# not a title\n```\n\n# Real Title\n\ntext"
    assert parse_file(write(tmp_path / "a.md", fenced)).title == "Real Title"
    front = "---\ntitle: From Front Matter\n---\n# Heading\n"
    assert parse_file(write(tmp_path / "b.md", front)).title == "From Front Matter"
    doc = parse_file(write(tmp_path / "c.md", "# 口令策略\n\n内容"))
    assert (doc.kind, doc.title, doc.pages[0].text) == (
        "markdown",
        "口令策略",
        "# 口令策略\n\n内容",
    )


def test_html_keeps_headings_lists_and_tables_and_drops_chrome(tmp_path: Path) -> None:
    html = """<!DOCTYPE html><html><head><title>Baseline</title><style>p{}</style></head>
    <body><nav>Home | About</nav><h1>Access control</h1><p>Deny by <b>default</b>.</p>
    <script>alert('x')</script><h2>Rules</h2><ul><li>one</li><li>two</li></ul>
    <table><tr><th>Item</th><th>Value</th></tr><tr><td>lockout</td><td>5 | tries</td></tr></table>
    </body></html>"""
    doc = parse_file(write(tmp_path / "page.html", html))
    assert doc.kind == "html" and doc.title == "Baseline"
    assert doc.pages[0].text == (
        "# Access control\n\nDeny by default.\n\n## Rules\n\n- one\n- two\n\n"
        "| Item | Value |\n|---|---|\n| lockout | 5 \\| tries |"
    )
    for noise in ("alert", "Home", "p{}"):
        assert noise not in doc.pages[0].text


def test_html_with_only_scripts_is_a_parse_error(tmp_path: Path) -> None:
    path = write(tmp_path / "app.html", "<html><body><script>var a = 1;</script></body></html>")
    with pytest.raises(ParseError, match=r"^app\.html has no readable text"):
        parse_file(path)


def make_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_heading("安全基线", level=1)
    document.add_paragraph("适用于所有服务器。")
    document.add_heading("1.1 口令策略", level=2)
    table = document.add_table(rows=2, cols=2)
    for (row, col), value in {(0, 0): "项", (0, 1): "要求", (1, 0): "长度", (1, 1): "≥ 12"}.items():
        table.cell(row, col).text = value
    document.add_paragraph("检查", style="List Bullet")
    document.add_paragraph("表格之后的段落。")
    document.save(path)
    return path


def test_docx_headings_paragraphs_and_tables_come_out_in_document_order(tmp_path: Path) -> None:
    doc = parse_file(make_docx(tmp_path / "baseline.docx"))
    assert doc.kind == "docx" and doc.title == "安全基线"
    assert doc.pages[0].text == (
        "# 安全基线\n\n适用于所有服务器。\n\n## 1.1 口令策略\n\n"
        "| 项 | 要求 |\n|---|---|\n| 长度 | ≥ 12 |\n\n- 检查\n\n表格之后的段落。"
    )


def test_docx_title_comes_from_its_properties_when_set(tmp_path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Hardening Guide"
    document.add_paragraph("body")
    document.save(tmp_path / "g.docx")
    assert parse_file(tmp_path / "g.docx").title == "Hardening Guide"


def test_a_damaged_docx_is_a_parse_error(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "broken.docx", "w") as archive:
        archive.writestr("word/document.xml", "<not-closed")
    with pytest.raises(ParseError, match=r"^broken\.docx "):
        parse_file(tmp_path / "broken.docx")


def test_an_empty_docx_is_a_parse_error(tmp_path: Path) -> None:
    docx.Document().save(tmp_path / "blank.docx")
    with pytest.raises(ParseError, match=r"^blank\.docx contains no text\.$"):
        parse_file(tmp_path / "blank.docx")


def test_source_and_kind_can_be_given(tmp_path: Path) -> None:
    path = write(tmp_path / "upload-1234.tmp", "# Title\n\nbody")
    doc = parse_file(path, source="报告.md", kind="markdown")
    assert (doc.source, doc.kind, doc.title) == ("报告.md", "markdown", "Title")


def test_source_defaults_to_the_sanitized_file_name(tmp_path: Path) -> None:
    path = write(tmp_path / "  spaced   name.txt", "x")
    assert parse_file(path).source == "spaced name.txt"


def test_a_jsonl_corpus_is_not_a_single_document(tmp_path: Path) -> None:
    path = write(tmp_path / "corpus.jsonl", '{"id": 1, "text": "x"}\n')
    with pytest.raises(ParseError, match=r"^corpus\.jsonl is a JSONL corpus.*iter_jsonl"):
        parse_file(path)


def test_an_unknown_kind_is_a_parse_error_listing_the_kinds(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"unknown document kind 'rtf'; expected one of pdf"):
        parse_file(write(tmp_path / "a.txt", "x"), kind="rtf")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.md", b""),
        ("blank.txt", b"  \n \n"),
        ("photo.txt", b"\x89PNG\r\n\x1a\n" + bytes(200)),
        ("bad.pdf", b"%PDF-1.4\ngarbage"),
        ("fake.docx", b"PK\x03\x04 not really a zip"),
    ],
)
def test_every_failure_is_one_sentence_naming_the_file(
    tmp_path: Path, name: str, data: bytes
) -> None:
    with pytest.raises(ParseError) as info:
        parse_file(write(tmp_path / name, data))
    message = str(info.value)
    assert message.startswith(name + " ")
    assert message.endswith(".") and "\n" not in message and "Traceback" not in message


def test_errors_name_the_given_source_not_the_file_on_disk(tmp_path: Path) -> None:
    path = write(tmp_path / "3f9a.upload", b"")
    with pytest.raises(ParseError, match=r"^季度报告\.pdf is empty\.$"):
        parse_file(path, source="季度报告.pdf")
