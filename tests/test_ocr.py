"""Scanned PDFs are read by OCR, offline (issue 37): a page without a text layer, or with a
garbage one, is read by RapidOCR; its text keeps its page, the build tells each page read, and a
chunk read so is marked in its citation.

The scanned PDF is tests/fixtures/scanned/scanned.pdf: four pages of our own Chinese standard,
turned and blurred like a photocopy (make_scanned.py made it; pages.json is what it drew).
"""

from __future__ import annotations

import io
import json
import sqlite3
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pytest

from tests.test_ingest_pdf import make_pdf, text
from zhixing.app.rounds import where
from zhixing.app.strings.build import EN, ZH
from zhixing.core.answer import grounded_answer
from zhixing.core.build.events import ProgressEvent
from zhixing.core.config import Settings
from zhixing.core.embed import BuiltinEmbedder
from zhixing.core.ingest import parse_file
from zhixing.core.ingest.ocr_text import Box, garbled, page_text
from zhixing.core.ingest.pdf_streams import Listener
from zhixing.core.service import KnowledgeService
from zhixing.core.store.catalog import Catalog

SCANNED = Path(__file__).parent / "fixtures" / "scanned"
# A phrase of each page, as drawn (pages.json), and the page it is on.
PHRASES = {
    1: "逐步延长的锁定",
    2: "空闲超过30分钟的会话应自动终止",
    3: "密钥管理系统",
    4: "防止未经授权的修改和删除",
}


@pytest.fixture(scope="module")
def scanned_kb(
    tmp_path_factory: pytest.TempPathFactory, embedder: BuiltinEmbedder
) -> Iterator[tuple[KnowledgeService, Any, list[ProgressEvent]]]:
    """The fixture PDF added to a fresh home, offline, in chunks small enough to stay on a page."""
    home = tmp_path_factory.mktemp("ocr") / "home"
    settings = Settings(home=home, parse_workers=1, chunk_units=120, chunk_overlap_units=0)
    events: list[ProgressEvent] = []
    with KnowledgeService(settings, embedder=embedder) as svc:
        svc.kbs.create("kb")
        report = svc.builds.add("kb", [SCANNED / "scanned.pdf"], on_event=events.append)
        yield svc, report, events


def test_the_fixture_is_four_pages_of_images_without_a_text_layer() -> None:
    document = pdfium.PdfDocument(str(SCANNED / "scanned.pdf"))
    try:
        assert len(document) == 4
        for index in range(4):
            assert document[index].get_textpage().count_chars() == 0
    finally:
        document.close()
    drawn = json.loads((SCANNED / "pages.json").read_text(encoding="utf-8"))
    for page, phrase in PHRASES.items():
        assert phrase in "".join(drawn[page - 1]["lines"])


@pytest.mark.slow
def test_a_scanned_chinese_pdf_is_added_offline_and_a_phrase_of_each_page_finds_that_page(
    scanned_kb: tuple[KnowledgeService, Any, list[ProgressEvent]],
) -> None:
    svc, report, _ = scanned_kb
    assert report.ok and report.added == ["scanned.pdf"] and report.warnings == []
    for page, phrase in PHRASES.items():
        top = svc.search.query(phrase, ["kb"], top_k=3)[0]
        assert (top.page, top.ocr) == (page, True), phrase
        assert phrase in top.text


@pytest.mark.slow
def test_the_build_tells_each_page_ocr_reads(
    scanned_kb: tuple[KnowledgeService, Any, list[ProgressEvent]],
) -> None:
    _, _, events = scanned_kb
    ocr = [e for e in events if e.stage == "ocr"]
    assert [(e.step, e.steps, e.message) for e in ocr] == [
        (n, 4, "scanned.pdf") for n in (1, 2, 3, 4)
    ]
    stages = [e.stage for e in events]
    assert stages.index("ocr") > stages.index("scan") and stages.index("ocr") < stages.index("done")


@pytest.mark.slow
def test_a_chunk_read_by_ocr_is_marked_in_its_citation(
    scanned_kb: tuple[KnowledgeService, Any, list[ProgressEvent]],
) -> None:
    svc, _, _ = scanned_kb
    question = "会话空闲多久自动终止"
    answer = grounded_answer(question, svc.search.query(question, ["kb"], top_k=3))
    assert answer.found and answer.citations
    cited = answer.citations[0]
    assert cited.ocr and cited.page == 2 and "空闲超过30分钟的会话应自动终止" in cited.text
    assert answer.to_json()["citations"][0]["ocr"] is True
    assert where(cited.page, ocr=cited.ocr) == "第 2 页 · OCR"
    assert where(cited.page) == "第 2 页"


@pytest.mark.slow
def test_a_page_with_a_text_layer_is_not_read_by_ocr_and_each_page_keeps_its_number(
    tmp_path: Path,
) -> None:
    mixed = pdfium.PdfDocument(make_pdf([text(72, 700, "Session tokens expire after an hour.")]))
    scan = pdfium.PdfDocument(str(SCANNED / "scanned.pdf"))
    mixed.import_pages(scan, [2])
    mixed.save(tmp_path / "mixed.pdf")
    mixed.close()
    scan.close()
    doc = parse_file(tmp_path / "mixed.pdf")
    first, second = doc.pages
    assert (first.number, first.ocr, first.text) == (
        1,
        False,
        "Session tokens expire after an hour.",
    )
    assert (second.number, second.ocr) == (2, True)
    assert "6.2 密钥应存放在专用的密钥管理系统中" in second.text
    # The table drawn on the page comes out as the project's table text.
    assert "| RSA | 数字签名 | 3072位 |" in second.text


def test_a_text_layer_of_private_use_or_replacement_characters_is_garbage() -> None:
    assert garbled("\ue000\ue001\ue002 \ue003\ufffd AB")
    assert not garbled("会话标识应立即失效。Session IDs rotate.")
    assert not garbled("   ")


def corners(x: float, y: float, width: float, height: float, slope: float = 0.0) -> Any:
    """A box's corners, its top edge rising `slope` pixels per pixel to the right."""
    return ((x, y), (x + width, y + slope * width), (x + width, y + height + slope * width),
            (x, y + height))  # fmt: skip


def test_wrapped_lines_rejoin_into_a_sentence_and_a_new_clause_starts_a_paragraph() -> None:
    boxes = [
        Box("3.1用户口令长度不应少于12个字符，系统应允许使用不少", corners(100, 100, 900, 30)),
        Box("于64个字符的口令。", corners(100, 150, 250, 30)),
        Box(
            "3.2 Passwords are checked against a list of breached pass-", corners(100, 200, 900, 30)
        ),
        Box("words before they are accepted", corners(100, 250, 500, 30)),
    ]
    assert page_text(boxes) == (
        "3.1 用户口令长度不应少于12个字符，系统应允许使用不少于64个字符的口令。\n"
        "3.2 Passwords are checked against a list of breached passwords before they are"
        " accepted",
        0,
    )


def test_a_turned_page_reads_line_by_line_and_its_aligned_cells_make_a_table() -> None:
    slope = -0.04  # about 2.3 degrees: the right end of a row sits higher than its left
    rows = [
        ("算法", "用途", "最小长度"),
        ("RSA", "数字签名", "3072位"),
        ("AES", "数据加密", "128位"),
    ]
    boxes = [Box("表1 密钥长度最低要求", corners(100, 100, 900, 30, slope))]
    for r, cells in enumerate(rows):
        for c, cell in enumerate(cells):
            x = 100 + 330 * c
            boxes.append(Box(cell, corners(x, 150 + 45 * r + slope * (x - 100), 120, 30, slope)))
    text_out, tables = page_text(boxes)
    assert tables == 1
    assert text_out == (
        "表1 密钥长度最低要求\n\n| 算法 | 用途 | 最小长度 |\n|---|---|---|\n"
        "| RSA | 数字签名 | 3072位 |\n| AES | 数据加密 | 128位 |"
    )


@pytest.mark.slow
def test_an_exported_knowledge_base_keeps_its_ocr_marks_and_an_older_archive_has_none(
    scanned_kb: tuple[KnowledgeService, Any, list[ProgressEvent]], tmp_path: Path
) -> None:
    svc, _, _ = scanned_kb
    archive = tmp_path / "kb.zip"
    svc.kbs.export_archive("kb", archive)
    svc.kbs.import_archive(archive, as_name="copy")
    assert svc.search.query(PHRASES[2], ["copy"], top_k=1)[0].ocr
    # An archive written before OCR: its chunk rows have no `ocr` field.
    older = tmp_path / "older.zip"
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(older, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "tables/chunks.jsonl":
                rows = [json.loads(line) for line in data.splitlines()]
                data = "\n".join(
                    json.dumps({k: v for k, v in r.items() if k != "ocr"}) for r in rows
                ).encode()
            dst.writestr(name, data)
    svc.kbs.import_archive(older, as_name="older")
    assert not svc.search.query(PHRASES[2], ["older"], top_k=1)[0].ocr


def test_a_catalog_written_before_ocr_gains_the_mark_with_its_chunks_unmarked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "catalog.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id INTEGER NOT"
            " NULL, kb_id INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL,"
            " heading_path TEXT NOT NULL DEFAULT '[]', page_start INTEGER NOT NULL, page_end"
            " INTEGER NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL)"
        )
        db.execute("INSERT INTO chunks VALUES (1, 1, 1, 0, 'text', '[]', 1, 1, 1, 1)")
    db.close()
    catalog = Catalog(path)
    try:
        assert catalog.db.rows("SELECT id, ocr FROM chunks") == [{"id": 1, "ocr": 0}]
    finally:
        catalog.close()


def test_ocr_progress_sums_the_pages_every_worker_announces() -> None:
    told: list[tuple[int, int]] = []
    listener = Listener(lambda done, todo: told.append((done, todo)))
    listener.listen(io.BytesIO(b"ocr-todo 2\nocr-page 1\nocr-todo 3\nnoise\nocr-page 7\n"))
    listener.listen(io.BytesIO(b"error scan.pdf cannot be read by OCR.\n"))
    assert told == [(1, 2), (2, 5)]
    assert listener.error == "scan.pdf cannot be read by OCR."


def test_the_build_page_words_ocr_progress_by_page() -> None:
    assert ZH.STAGE_TEXT["ocr"].format(step=3, steps=75, message="scan.pdf") == (
        "OCR 第 3/75 页：scan.pdf"
    )
    assert ZH.STAGE_NOW["ocr"].format(step=3, steps=75) == "OCR 第 3/75 页"
    assert EN.STAGE_NOW["ocr"].format(step=3, steps=75) == "OCR page 3/75"


def test_two_columns_are_read_one_after_the_other() -> None:
    left = [f"左栏第{n}行的文字内容，说明会话管理的要求" for n in range(1, 13)]
    right = [f"右栏第{n}行的文字内容，说明访问控制的要求" for n in range(1, 13)]
    boxes = [Box(t, corners(100, 100 + 45 * i, 420, 30)) for i, t in enumerate(left)]
    boxes += [Box(t, corners(620, 100 + 45 * i, 420, 30)) for i, t in enumerate(right)]
    text_out, tables = page_text(boxes)
    assert tables == 0
    assert text_out == "".join(left) + "".join(right)


def test_the_cli_shows_which_page_ocr_reads() -> None:
    from zhixing.cli.main import _Progress

    out = io.StringIO()
    _Progress(out)(ProgressEvent("ocr", 0, 1, "scan.pdf", step=3, steps=75))
    assert out.getvalue().rstrip().endswith("· OCR page 3/75: scan.pdf")


@pytest.mark.process
def test_a_long_scan_is_not_stopped_while_ocr_keeps_reading_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parse limit runs from the last page OCR read: a scan of many pages is not cut off
    at a fixed time, and a worker that stops reading still is (tests/test_security_limits.py)."""
    from zhixing.core.ingest import pdf

    path = tmp_path / "scan.pdf"
    path.write_bytes(make_pdf([text(72, 700, "Scanned.")]))
    # A worker that reads five pages, 0.4 s each: 2 s in all, past a limit of 1 s.
    worker = (
        "import json, sys, time\n"
        "print('ocr-todo 5', file=sys.stderr, flush=True)\n"
        "for n in range(1, 6):\n"
        "    time.sleep(0.4)\n"
        "    print(f'ocr-page {n}', file=sys.stderr, flush=True)\n"
        "print(json.dumps([{'number': 1, 'text': 'Read by OCR.', 'status': 'ok', 'ocr': True}]))\n"
    )
    monkeypatch.setattr(pdf, "_worker_command", lambda: [sys.executable, "-c", worker])
    monkeypatch.setattr(pdf, "PARSE_TIMEOUT_S", 1.0)
    told: list[tuple[int, int]] = []
    with pdf.reporting_ocr(lambda done, todo: told.append((done, todo))):
        doc = parse_file(path)
    assert [(p.text, p.ocr) for p in doc.pages] == [("Read by OCR.", True)]
    assert told == [(n, 5) for n in range(1, 6)]
