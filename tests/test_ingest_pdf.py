"""Parsing PDFs: text per page, tables, warnings, and one clear error for each bad file.

The small PDFs here are written by hand (Helvetica text, rules, a tiny image); the real files
come from ../shared/data and are skipped when it is absent.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from zhixing.core.errors import ParseError
from zhixing.core.ingest import parse_file
from zhixing.core.ingest.pdf import _drop_running_lines
from zhixing.core.models import Page

SHARED = Path(__file__).parents[1].parent / "shared" / "data"
IMAGE = "q 200 0 0 200 100 400 cm /Im1 Do Q\n"


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/data holds the real test documents)")
    return path


def text(x: float, y: float, value: str, size: float = 11) -> str:
    value = value.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /F1 {size} Tf {x} {y} Td ({value}) Tj ET\n"


def make_pdf(pages: list[str], *, title: str | None = None, encrypt: bool = False) -> bytes:
    """Write a minimal PDF whose pages have the given content streams."""
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        4: b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Length 1 >>\nstream\n\x80\nendstream",
    }
    kids, number = [], 5
    for content in pages:
        data = content.encode("latin-1")
        objects[number] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
            f"<< /F1 3 0 R >> /XObject << /Im1 4 0 R >> >> /Contents {number + 1} 0 R >>"
        ).encode()
        objects[number + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)
        kids.append(f"{number} 0 R")
        number += 2
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    trailer = f"/Size {number + 2} /Root 1 0 R"
    if title:
        objects[number] = f"<< /Title ({title}) >>".encode()
        trailer += f" /Info {number} 0 R"
    if encrypt:
        objects[number + 1] = (
            b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <" + b"11" * 32
            + b"> /U <" + b"22" * 32 + b"> >>"
        )  # fmt: skip
        trailer += f" /Encrypt {number + 1} 0 R /ID [<{'ab' * 16}> <{'ab' * 16}>]"
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for key in range(1, number + 2):
        offsets[key] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (key, objects.get(key, b"null"))
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (number + 2)
    out += b"".join(b"%010d 00000 n \n" % offsets[key] for key in range(1, number + 2))
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


TOPICS = ["Passwords", "Sessions", "Logging", "Backups", "Patching", "Encryption", "Access"]


def paragraph_page(number: int) -> str:
    topic = TOPICS[number % len(TOPICS)]
    return (
        text(72, 750, "Acme Security Baseline", 9)
        + text(72, 700, f"{topic} rules, part {number}. They have two sentences.")
        + text(300, 40, f"Page {number}", 9)
    )


def test_text_comes_out_per_page_with_page_numbers_and_metadata_title(tmp_path: Path) -> None:
    path = write(
        tmp_path / "two.pdf",
        make_pdf([text(72, 700, "First page."), text(72, 700, "Second.")], title="Baseline"),
    )
    doc = parse_file(path)
    assert (doc.kind, doc.source, doc.title, doc.warnings) == ("pdf", "two.pdf", "Baseline", ())
    assert [(p.number, p.text) for p in doc.pages] == [(1, "First page."), (2, "Second.")]


def test_without_a_metadata_title_the_first_line_is_the_title(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.pdf",
        make_pdf([text(72, 700, "Access Control Policy", 18) + text(72, 600, "Body.")]),
    )
    assert parse_file(path).title == "Access Control Policy"


def test_a_page_without_a_text_layer_where_ocr_finds_nothing_is_skipped_with_a_warning(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "mixed.pdf",
        make_pdf([text(72, 700, "Hello."), IMAGE, text(72, 700, "Bye."), IMAGE]),
    )
    doc = parse_file(path)
    assert [p.number for p in doc.pages] == [1, 3]
    assert doc.warnings == (
        "pages 2, 4 have no text layer and OCR found no text; they were skipped.",
    )


def test_a_pdf_of_images_where_ocr_finds_no_text_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "scan.pdf", make_pdf([IMAGE, IMAGE]))
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert str(info.value) == (
        "scan.pdf has no text layer and OCR found no text on its pages; check that the scans"
        " are not blank or far too faint."
    )


def test_a_pdf_of_blank_pages_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(
        ParseError, match=r"^blank\.pdf contains no text \(its pages are blank\)\.$"
    ):
        parse_file(write(tmp_path / "blank.pdf", make_pdf(["", ""])))


def test_a_pdf_with_zero_pages_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"^zero\.pdf has no pages\.$"):
        parse_file(write(tmp_path / "zero.pdf", make_pdf([])))


def test_an_encrypted_pdf_is_rejected_with_advice(tmp_path: Path) -> None:
    path = write(tmp_path / "secret.pdf", make_pdf([text(72, 700, "x")], encrypt=True))
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert (
        str(info.value)
        == "secret.pdf is encrypted (password-protected); decrypt it and add it again."
    )


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.4\n" + b"garbage " * 200,
        make_pdf([text(72, 700, "Hello. " * 20)] * 3)[:400],
    ],
    ids=["garbage", "truncated"],
)
def test_a_broken_pdf_is_rejected_without_a_traceback(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ParseError) as info:
        parse_file(write(tmp_path / "broken.pdf", data))
    assert (
        str(info.value) == "broken.pdf is not a readable PDF (the file is damaged or incomplete)."
    )


def test_running_headers_and_page_numbers_are_removed(tmp_path: Path) -> None:
    path = write(tmp_path / "report.pdf", make_pdf([paragraph_page(n) for n in range(1, 6)]))
    doc = parse_file(path)
    assert [p.text for p in doc.pages] == [
        f"{TOPICS[n % len(TOPICS)]} rules, part {n}. They have two sentences." for n in range(1, 6)
    ]


def borderless_table_page() -> str:
    """Word's borderless table: a header, then a rule drawn cell by cell with joints."""
    columns = [72, 110, 430, 460, 490, 530]
    rule = "".join(
        f"{left} 690 {right - left} 0.12 re f {right} 690 0.1 0.12 re f\n"
        for left, right in zip(columns, columns[1:], strict=False)
    )
    return (
        text(72, 730, "V1.1 Secure Development Lifecycle", 14)
        + text(80, 695, "#") + text(115, 695, "Description") + text(435, 695, "L1")
        + text(465, 695, "L2") + text(495, 695, "CWE") + rule
        + text(75, 675, "1.1.1") + text(115, 675, "Verify the use of a secure software")
        + text(465, 675, "v") + text(495, 675, "284") + text(115, 661, "development lifecycle.")
        + text(75, 640, "1.1.2") + text(115, 640, "Verify threat modeling.") + text(435, 640, "v")
        + text(72, 600, "Text after the table, a paragraph that is wide enough to cross columns.")
    )  # fmt: skip


def test_a_borderless_table_becomes_a_markdown_table_without_duplicate_text(tmp_path: Path) -> None:
    doc = parse_file(write(tmp_path / "asvs.pdf", make_pdf([borderless_table_page()])))
    assert doc.pages[0].text == (
        "## V1.1 Secure Development Lifecycle\n\n"
        "| # | Description | L1 | L2 | CWE |\n|---|---|---|---|---|\n"
        "| 1.1.1 | Verify the use of a secure software development lifecycle. |  | v | 284 |\n"
        "| 1.1.2 | Verify threat modeling. | v |  |  |\n\n"
        "Text after the table, a paragraph that is wide enough to cross columns."
    )


def ruled_table_page() -> str:
    xs, ys = [72, 200, 330], [700, 680, 660, 640]
    grid = "".join(f"{xs[0]} {y} m {xs[-1]} {y} l S\n" for y in ys)
    grid += "".join(f"{x} {ys[0]} m {x} {ys[-1]} l S\n" for x in xs)
    cells = [["Control", "Setting"], ["Lockout", "5 tries"], ["Length", "12"]]
    body = "".join(
        text(xs[c] + 4, ys[r] - 14, value)
        for r, row in enumerate(cells)
        for c, value in enumerate(row)
    )
    return text(72, 730, "Before the table.") + grid + body + text(72, 600, "After the table.")


def test_a_ruled_table_becomes_a_markdown_table_in_place(tmp_path: Path) -> None:
    doc = parse_file(write(tmp_path / "grid.pdf", make_pdf([ruled_table_page()])))
    assert doc.pages[0].text == (
        "Before the table.\n\n| Control | Setting |\n|---|---|\n| Lockout | 5 tries |\n"
        "| Length | 12 |\n\nAfter the table."
    )


def test_parallel_workers_give_the_same_document(tmp_path: Path) -> None:
    pages = [paragraph_page(n) for n in range(1, 21)] + [
        ruled_table_page(),
        borderless_table_page(),
    ]
    path = write(tmp_path / "long.pdf", make_pdf(pages))
    assert parse_file(path, workers=2) == parse_file(path, workers=1)


@pytest.mark.shared_data
def test_the_real_encrypted_pdf_is_rejected() -> None:
    with pytest.raises(ParseError, match=r"^password-example\.pdf is encrypted"):
        parse_file(shared("pdfs", "password-example.pdf"))


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("name", "message"),
    [("issue-297-example.pdf", r"(has no pages|contains no text)")],
)
def test_real_pdfs_without_text_are_rejected(name: str, message: str) -> None:
    with pytest.raises(ParseError, match=rf"^{re.escape(name)} {message}"):
        parse_file(shared("pdfs", name))


@pytest.mark.shared_data
def test_a_real_scanned_chinese_pdf_is_read_by_ocr_page_by_page() -> None:
    doc = parse_file(shared("pdfs", "issue-203-decimalize.pdf"))
    assert [(p.number, p.ocr) for p in doc.pages] == [(1, True), (2, True), (3, True)]
    assert doc.title == "行政处罚决定书" and doc.warnings == ()
    assert "海关" in doc.pages[1].text


@pytest.mark.shared_data
def test_the_real_malformed_pdf_is_read_or_rejected_cleanly() -> None:
    try:
        doc = parse_file(shared("pdfs", "malformed-from-issue-932.pdf"))
    except ParseError as exc:
        assert str(exc).startswith("malformed-from-issue-932.pdf ")
    else:
        assert doc.pages and doc.pages[0].text.strip()


@pytest.mark.shared_data
def test_chinese_pdf_with_ruled_tables_keeps_text_and_tables() -> None:
    doc = parse_file(shared("pdfs", "issue-67-example.pdf"))
    text = "\n".join(p.text for p in doc.pages)
    assert doc.page_count == 22 and doc.title
    assert "公司董事会、监事会及董事、监事、高级管理人员保证季度报告内容的真" in text
    assert text.count("|---|") >= 20
    assert "| 营业收入（元） | 4,755,785.11 | 5,699,227.63 | -16.55% |" in text


def asvs_rows(doc_text: str) -> dict[str, list[str]]:
    rows = {}
    for line in doc_text.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) >= 5 and re.fullmatch(r"\d+\.\d+\.\d+", cells[0]):
            rows[cells[0]] = cells
    return rows


def squash(value: str) -> str:
    value = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", value)  # Markdown links in the CSV
    return re.sub(r"\s+", "", value.replace("\\|", "|"))


@pytest.mark.shared_data
def test_asvs_requirement_tables_match_the_answer_key() -> None:
    pdf = shared("docs", "asvs-4.0.3", "OWASP_ASVS_4.0.3-zh-cn.pdf")
    doc = parse_file(pdf)
    assert doc.page_count == 75 and doc.title == "应用安全验证标准 4.0.3" and not doc.warnings
    rows = asvs_rows("\n".join(p.text for p in doc.pages))
    with shared("docs", "asvs-4.0.3", "ASVS_4.0.3-zh-cn.csv").open(encoding="utf-8") as handle:
        key = list(csv.DictReader(handle))
    found = [r for r in key if r["req_id"].removeprefix("V") in rows]
    exact = [r for r in found if squash(rows[r["req_id"][1:]][1]) == squash(r["req_description"])]
    levels = [
        r for r in found
        if [c == "✓" for c in rows[r["req_id"][1:]][2:5]]
        == [r[k] == "✓" for k in ("level1", "level2", "level3")]
    ]  # fmt: skip
    assert len(found) >= 0.98 * len(key)
    assert len(exact) >= 0.95 * len(key)
    assert len(levels) >= 0.95 * len(key)


def test_a_running_header_a_table_took_in_as_a_row_is_removed() -> None:
    """The table that ends a page can take the page's running header in as a row of cells; the
    row is compared by its words and goes like the header on the other pages."""
    table = "| # | Description | L1 |\n|---|---|---|\n"
    pages = [
        Page(1, f"Acme Baseline 4.0 1\nSessions rules.\n{table}| 1.1 | Verify tokens. | v |"),
        Page(2, "| 1.2 | Verify cookies. | v |\n| Acme | Baseline 4.0 |  | 2 |"),
        Page(3, "Acme Baseline 4.0 3\nLogging rules, kept for a year."),
        Page(4, "Acme Baseline 4.0 4\nBackups rules, tested each month."),
    ]
    assert [p.text for p in _drop_running_lines(pages)] == [
        f"Sessions rules.\n{table}| 1.1 | Verify tokens. | v |",
        "| 1.2 | Verify cookies. | v |",
        "Logging rules, kept for a year.",
        "Backups rules, tested each month.",
    ]


def test_a_running_header_taken_for_a_tables_header_row_leaves_the_rows_to_run_on() -> None:
    pages = [
        Page(1, "Acme Baseline 4.0 1\n| # | Description |\n|---|---|\n| 1.1 | Verify tokens. |"),
        Page(2, "| Acme | Baseline 4.0 2 |\n|---|---|\n| 1.2 | Verify cookies. |"),
        Page(3, "Acme Baseline 4.0 3\nLogging rules, kept for a year."),
        Page(4, "Acme Baseline 4.0 4\nBackups rules, tested each month."),
    ]
    assert _drop_running_lines(pages)[1].text == "| 1.2 | Verify cookies. |"


@pytest.mark.shared_data
def test_the_english_asvs_pdf_keeps_no_running_header_in_its_tables() -> None:
    doc = parse_file(shared("docs", "asvs-4.0.3", "OWASP_ASVS_4.0.3-en.pdf"))
    text = "\n".join(p.text for p in doc.pages)
    assert "| OWASP | Application Security Verification Standard" not in text
    assert "| 10.2.5 | Verify that the application source code" in text  # the rows stay
