"""Extract the text of a range of PDF pages; the unit of work a parse worker process runs.

pypdfium2 reads each page's glyphs and paths (fast, in C), and `pdf_layout` turns them into lines
and borderless tables. Only a page that has ruled lines in both directions (a grid: a lattice
table, or something that may be one) is also opened with pdfplumber, whose lattice table finder
is the reference; its tables replace the glyphs they cover. Pages are closed as soon as they are
read so a long document never sits in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from ..errors import ParseError
from .ocr import read_page
from .ocr_text import garbled
from .pdf_layout import (
    Char,
    Rule,
    TableBlock,
    Word,
    assemble_page,
    build_lines,
    build_words,
    reading_order,
)
from .pdf_tables import find_rule_tables

__all__ = ["PageResult", "open_pdf", "parse_page_range", "parse_with_pdfminer", "read_scanned"]

_THIN = 2.0


@dataclass(frozen=True)
class PageResult:
    """What one page gave: its text, or why it has none (`status`: ok, scanned, blank, error);
    `ocr` when the text was read by OCR."""

    number: int
    text: str
    status: str
    tables: int = 0
    detail: str = ""
    ocr: bool = False


def open_pdf(path: Path) -> pdfium.PdfDocument:
    """Open a PDF with pypdfium2; raises pypdfium2's PdfiumError for encrypted or broken files."""
    return pdfium.PdfDocument(str(path))


def parse_page_range(path: str, start: int, stop: int) -> list[PageResult]:
    """Parse pages [start, stop) (0-based) of the PDF at `path`; the worker entry point."""
    document = open_pdf(Path(path))
    lattice = _LatticeReader(path)
    try:
        return [_parse_one(document, index, lattice) for index in range(start, stop)]
    finally:
        lattice.close()
        document.close()


def read_scanned(
    path: str, results: list[PageResult], report: Callable[[str], None], *, threads: int = 0
) -> list[PageResult]:
    """Read the `scanned` pages among `results` by OCR (on `threads` cores, 0 for all); a page
    OCR finds no text on stays so.

    `report` is told `ocr-todo K` (the pages to read) first, then `ocr-page N` as each is read.
    """
    todo = [r for r in results if r.status == "scanned"]
    if not todo:
        return results
    report(f"ocr-todo {len(todo)}")
    read: dict[int, PageResult] = {}
    document = open_pdf(Path(path))
    try:
        for result in todo:
            read[result.number] = _ocr_one(document, result, threads)
            report(f"ocr-page {result.number}")
    finally:
        document.close()
    return [read.get(r.number, r) for r in results]


def _ocr_one(document: pdfium.PdfDocument, result: PageResult, threads: int) -> PageResult:
    page = document[result.number - 1]
    try:
        text, tables = read_page(page, threads=threads)
    except ParseError:
        raise  # OCR cannot start at all: no page of any file can be read
    except Exception as exc:  # one page the engine chokes on must not cost the rest
        return PageResult(result.number, "", "error", detail=f"OCR: {type(exc).__name__}: {exc}")
    finally:
        page.close()
    if not text.strip():
        return result
    return PageResult(result.number, text, "ok", tables, ocr=True)


def _parse_one(document: pdfium.PdfDocument, index: int, lattice: _LatticeReader) -> PageResult:
    number = index + 1
    try:
        page = document[index]
    except Exception as exc:  # pdfium raises its own error type for a page it cannot load
        return PageResult(number, "", "error", detail=str(exc))
    try:
        return _read_page(page, number, index, lattice)
    except Exception as exc:  # one damaged page must not cost the rest of the document
        return PageResult(number, "", "error", detail=f"{type(exc).__name__}: {exc}")
    finally:
        page.close()


def _read_page(
    page: pdfium.PdfPage, number: int, index: int, lattice: _LatticeReader
) -> PageResult:
    textpage = page.get_textpage()
    try:
        height = page.get_height()
        if page.get_rotation() in (90, 270):
            # Glyph boxes stay in unrotated space; pdfium's own reading order is the safer bet.
            text = _normalize(textpage.get_text_range())
            return _result(page, number, text, 0)
        chars = list(_chars(textpage, height))
    finally:
        textpage.close()
    if not chars:
        return _result(page, number, "", 0)
    words = build_words(chars)
    rules, has_grid = _rules(page, height)
    tables: list[TableBlock] = []
    if has_grid:
        tables = lattice.tables(index)
        words = [w for w in words if not any(_inside(w, t) for t in tables)]
    lines = build_lines(words)
    rule_tables, used = find_rule_tables(lines, rules)
    tables += rule_tables
    if not tables:  # pages with tables keep top-to-bottom order; columns are read otherwise
        lines = reading_order(lines)
    return _result(page, number, assemble_page(lines, tables, used), len(tables))


def _inside(word: Word, table: TableBlock) -> bool:
    x_mid, y_mid = (word.x0 + word.x1) / 2, word.middle
    return table.x0 <= x_mid <= table.x1 and table.top <= y_mid <= table.bottom


def _result(page: pdfium.PdfPage, number: int, text: str, tables: int) -> PageResult:
    if text.strip():
        # A garbage layer (fonts without a Unicode map) is read from the glyphs drawn, by OCR.
        return (
            PageResult(number, "", "scanned")
            if garbled(text)
            else PageResult(number, text, "ok", tables)
        )
    images = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2)
    status = "scanned" if next(images, None) is not None else "blank"
    return PageResult(number, "", status)


def _normalize(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n"))


def _chars(textpage: pdfium.PdfTextPage, height: float) -> Iterator[Char]:
    space = soft = False
    for i in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage.raw, i)
        text = chr(code) if 0 < code < 0x110000 else ""
        if not text or text.isspace():
            if pdfium_c.FPDFText_IsGenerated(textpage.raw, i) == 1:
                soft = True
            else:
                space = True
            continue
        if code < 32 or 0xFFFE <= code <= 0xFFFF or 0xD800 <= code <= 0xDFFF:
            continue  # control codes and unmapped glyphs are noise, not text
        left, bottom, right, top = textpage.get_charbox(i, loose=True)
        size = round(pdfium_c.FPDFText_GetFontSize(textpage.raw, i), 1)
        yield Char(text, left, right, height - top, height - bottom, space, soft, size)
        space = soft = False


def _rules(page: pdfium.PdfPage, height: float) -> tuple[list[Rule], bool]:
    """Collect thin horizontal rules; tell whether the page also has a grid worth a lattice pass."""
    rules: list[Rule] = []
    vertical = 0
    boxes = 0
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=4):
        left, bottom, right, top = obj.get_bounds()
        width, tall = right - left, top - bottom
        if tall <= _THIN and width >= _THIN:
            if obj.level == 0:  # form XObject contents report bounds in the form's own space
                rules.append(Rule(left, right, height - (top + bottom) / 2))
        elif width <= _THIN and tall >= 4:
            vertical += 1
        elif width >= 20 and tall >= 10:
            boxes += 1  # a rectangle or a path drawing many lines at once: maybe a grid
    return rules, (vertical >= 2 and len(rules) >= 2) or boxes > 0


class _LatticeReader:
    """pdfplumber, opened lazily for pages with a grid, then closed page by page."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._pdf: Any = None

    def tables(self, index: int) -> list[TableBlock]:
        import pdfplumber  # imported here: most pages never need it, and it is slow to import

        if self._pdf is None:
            self._pdf = pdfplumber.open(self._path)
        page = self._pdf.pages[index]
        try:
            blocks = []
            for table in page.find_tables():
                rows = [[cell or "" for cell in row] for row in table.extract()]
                # A one-row or one-column "table" is a box drawn around text, not a table.
                if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
                    x0, top, x1, bottom = table.bbox
                    blocks.append(TableBlock(top, bottom, rows, x0, x1))
            return blocks
        finally:
            page.close()

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None


def parse_with_pdfminer(path: Path) -> tuple[list[PageResult], str]:
    """Read a file pdfium rejects with pdfplumber alone: plain text per page, no tables.

    Slower and simpler; it exists for damaged files that pdfminer's lenient parser can still read.
    Raises whatever pdfminer raises for a file it cannot read either.
    """
    import pdfplumber

    results: list[PageResult] = []
    with pdfplumber.open(str(path)) as pdf:
        title = str((pdf.metadata or {}).get("Title") or "").strip()
        for index, page in enumerate(pdf.pages):
            try:
                text = _normalize(page.extract_text() or "")
                status = "ok" if text.strip() else ("scanned" if page.images else "blank")
                results.append(PageResult(index + 1, text if text.strip() else "", status))
            except Exception as exc:  # one damaged page must not cost the rest
                results.append(PageResult(index + 1, "", "error", detail=str(exc)))
            finally:
                page.close()
    return results, title
