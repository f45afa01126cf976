"""sanitize_name: a user-given file name becomes a safe display and source name."""

from __future__ import annotations

import pytest

from core.ingest import sanitize_name


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("..\\..\\Windows\\win.ini", "win.ini"),
        ("/abs/path/to/report.pdf", "report.pdf"),
        ("uploads/../secret.txt", "secret.txt"),
    ],
)
def test_directories_and_parent_references_are_stripped(given: str, expected: str) -> None:
    assert sanitize_name(given) == expected


def test_unicode_names_are_kept() -> None:
    assert sanitize_name("中文.pdf") == "中文.pdf"
    assert sanitize_name("资料/信息安全技术 基本要求.docx") == "信息安全技术 基本要求.docx"


def test_control_characters_and_bidi_overrides_are_removed() -> None:
    assert sanitize_name("bad\x00name\x1f.txt") == "badname.txt"
    # U+202E would make "invoice_gpj.exe" display as "invoice_exe.jpg".
    assert sanitize_name("invoice_\u202egpj.exe") == "invoice_gpj.exe"


def test_whitespace_is_collapsed_and_trimmed() -> None:
    assert sanitize_name("  my \t  report\n.md  ") == "my report .md"


@pytest.mark.parametrize("given", ["", "   ", ".", "..", "/", "a/b/", "\x00\x01"])
def test_a_name_that_is_left_empty_becomes_unnamed(given: str) -> None:
    assert sanitize_name(given) == "unnamed"


def test_long_names_are_cut_and_keep_their_extension() -> None:
    name = sanitize_name("x" * 500 + ".pdf")
    assert len(name) <= 200
    assert name.endswith(".pdf")


def test_long_chinese_names_fit_a_file_system_name_in_bytes() -> None:
    name = sanitize_name("标准" * 200 + ".docx")
    assert name.endswith(".docx")
    assert len(name.encode("utf-8")) <= 255
