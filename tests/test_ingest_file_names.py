"""sanitize_name: a user-given file name becomes a safe display and source name."""

from __future__ import annotations

import pytest

from zhixing.core.ingest import sanitize_name


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


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("CON", "_CON"),
        ("con.txt", "_con.txt"),
        ("NUL.tar.gz", "_NUL.tar.gz"),
        ("Aux .md", "_Aux .md"),
        ("com1.pdf", "_com1.pdf"),
        ("LPT9", "_LPT9"),
        ("console.md", "console.md"),  # only the exact device names
        ("com10.md", "com10.md"),
    ],
)
def test_windows_device_names_get_a_prefix(given: str, expected: str) -> None:
    assert sanitize_name(given) == expected


def test_trailing_dots_and_spaces_are_cut_as_windows_would() -> None:
    assert sanitize_name("report.pdf. . ") == "report.pdf"
    assert sanitize_name("...") == "unnamed"


@pytest.mark.parametrize(
    "given",
    ["C:\\Users\\me\\evil.md", "\\\\server\\share\\evil.md", "/etc/../evil.md", "a/\x00/evil.md"],
)
def test_absolute_windows_and_unc_paths_keep_only_the_name(given: str) -> None:
    assert sanitize_name(given) == "evil.md"


def test_nul_c1_controls_and_line_separators_never_survive() -> None:
    name = sanitize_name("a\x00b\x85c\x9fd\u2028e\u2029f\r\ng.md")
    assert name == "abcd e f g.md"
    assert all(ord(c) >= 32 and not 0x7F <= ord(c) <= 0x9F for c in name)


def test_html_looking_names_are_kept_for_the_pages_to_escape() -> None:
    # Escaping is the renderer's job (docs/architecture.md §10); the name itself stays what the user sent.
    assert sanitize_name("<img src=x onerror=alert(3)>.md") == "<img src=x onerror=alert(3)>.md"


def test_a_very_long_name_with_a_long_extension_is_cut_to_fit() -> None:
    name = sanitize_name("a" * 300 + "." + "b" * 40)
    assert len(name) <= 200 and len(name.encode()) <= 240
    assert sanitize_name("x" * 400) == "x" * 200
