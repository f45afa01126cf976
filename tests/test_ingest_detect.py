"""detect_kind: the document kind by content first, extension second; clear errors otherwise."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pytest

from zhixing.core.errors import ParseError
from zhixing.core.ingest import detect_kind

SUPPORTED = "supported: PDF, DOCX, Markdown, text, HTML, JSONL"


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_pdf_is_found_by_its_magic_whatever_its_extension(tmp_path: Path) -> None:
    assert detect_kind(write(tmp_path / "report.txt", b"%PDF-1.7\n...")) == "pdf"


def test_a_docx_is_found_by_its_zip_content(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("hello")
    document.save(tmp_path / "renamed.bin")
    assert detect_kind(tmp_path / "renamed.bin") == "docx"


def test_a_zip_that_is_not_a_word_document_is_rejected(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "archive.docx", "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(ParseError, match=r"archive\.docx is a ZIP archive, not a document"):
        detect_kind(tmp_path / "archive.docx")


def test_an_excel_file_gets_advice(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "sheet.xlsx", "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(ParseError, match=r"sheet\.xlsx is an Excel or PowerPoint file"):
        detect_kind(tmp_path / "sheet.xlsx")


def test_html_is_found_by_content_and_by_extension(tmp_path: Path) -> None:
    assert detect_kind(write(tmp_path / "page", b"<!DOCTYPE html><html><p>x</p></html>")) == "html"
    assert detect_kind(write(tmp_path / "page.htm", b"<p>fragment</p>")) == "html"


def test_markdown_is_found_by_extension_or_by_headings(tmp_path: Path) -> None:
    assert detect_kind(write(tmp_path / "notes.md", b"plain words")) == "markdown"
    assert detect_kind(write(tmp_path / "README", b"# Title\n\ntext")) == "markdown"


def test_text_and_jsonl_are_found_by_extension(tmp_path: Path) -> None:
    assert detect_kind(write(tmp_path / "a.txt", "# 不是标题\n正文".encode())) == "text"
    assert detect_kind(write(tmp_path / "c.jsonl", b'{"id": 1, "text": "x"}\n')) == "jsonl"
    assert detect_kind(write(tmp_path / "c.ndjson", b'{"id": 1, "text": "x"}\n')) == "jsonl"


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n  "])
def test_an_empty_file_is_rejected(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ParseError, match=r"^empty\.txt is empty\.$"):
        detect_kind(write(tmp_path / "empty.txt", data))


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01" + bytes(64)),
        ("program.md", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4),
        ("random.txt", bytes(range(256)) * 16),
    ],
)
def test_binary_content_renamed_as_text_is_rejected(tmp_path: Path, name: str, data: bytes) -> None:
    with pytest.raises(ParseError) as info:
        detect_kind(write(tmp_path / name, data))
    assert str(info.value) == f"{name} is not a text document (binary content); {SUPPORTED}."


def test_an_old_word_file_gets_advice(tmp_path: Path) -> None:
    data = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512)
    with pytest.raises(ParseError, match=r"old\.doc is an old Microsoft Office file.*save it as"):
        detect_kind(write(tmp_path / "old.doc", data))


def test_utf16_text_is_text_not_binary(tmp_path: Path) -> None:
    path = write(tmp_path / "wide.txt", "信息安全 notes".encode("utf-16"))
    assert detect_kind(path) == "text"
    bomless = write(tmp_path / "wide2.txt", "plain ascii words here".encode("utf-16-le"))
    assert detect_kind(bomless) == "text"


def test_gbk_text_is_text(tmp_path: Path) -> None:
    assert (
        detect_kind(write(tmp_path / "gbk.txt", "中文内容，编码为 GBK。".encode("gbk"))) == "text"
    )


def test_a_missing_file_or_a_directory_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"^gone\.pdf could not be read"):
        detect_kind(tmp_path / "gone.pdf")
    (tmp_path / "folder.md").mkdir()
    with pytest.raises(ParseError, match=r"^folder\.md could not be read"):
        detect_kind(tmp_path / "folder.md")


def test_the_error_names_the_sanitized_file_name(tmp_path: Path) -> None:
    weird = tmp_path / "空\u202e文件.txt"
    weird.write_bytes(b"")
    with pytest.raises(ParseError, match=r"^空文件\.txt is empty\.$"):
        detect_kind(weird)


def test_a_large_gbk_file_cut_mid_character_is_still_text(tmp_path: Path) -> None:
    # 64 KB is read to detect the kind; an odd offset splits a two-byte GBK character there.
    data = ("a" + "信息安全管理制度。" * 8000).encode("gbk")
    assert detect_kind(write(tmp_path / "big.txt", data)) == "text"
