"""Scanned pages read again by a model that takes images (ZHIXING_VISION_MODEL): the model adds,
never subtracts (docs/architecture.md §4).

Every scanned page has been read by OCR in the parse workers. Here, in the build's own process,
each page OCR read is rendered again (core/ingest/pdf_image.py) and sent to the vision model
through the project's client (the `page_reading` role: cached, retried, validated). Its text
replaces OCR's only when `judge` finds it usable; otherwise, or when the model fails in any way,
the page keeps OCR's text and the document gets a warning that says why. The page stays `ocr`
(read from an image), so its chunks' citations stay honest.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import LLMError
from ..ingest.pdf_image import page_png
from ..llm.prompts import PAGE_READING, PageReading, png_url
from ..llm.protocol import LLM
from ..models import Page, ParsedDocument
from ..text.chinese import CJK_CHARS

__all__ = ["KEEP", "judge", "read_scans"]

log = logging.getLogger(__name__)

# The share of OCR's words a reading must keep to replace it. A perfect reader keeps every word
# OCR read right: OCR's precision, 0.969-1.0 per page (0.99 overall) on the four photocopied
# pages of tests/fixtures/scanned/ against the text drawn (pages.json). 0.9 leaves that margin,
# and refuses a reading that lost a tenth of the page (a paragraph of a typical page of ten).
KEEP = 0.9
# Pages sent at once: each is about a megabyte of PNG, so a long scan is not all held at once.
_GROUP = 8
# What a reading is measured in: each CJK ideograph, and each run of Latin letters or digits
# (case aside). Punctuation, spaces and Markdown's table pipes do not count, so a table the
# model writes as Markdown and OCR as aligned cells weigh the same.
_UNITS = re.compile(f"[{CJK_CHARS}]|[A-Za-z0-9]+")

PageRead = Callable[[int, int], None]  # (pages read, pages to read): the build's progress


def units(text: str) -> Counter[str]:
    """The words a text holds, as `judge` counts them."""
    return Counter(unit.lower() for unit in _UNITS.findall(text))


def judge(ocr: str, reading: PageReading) -> str:
    """Why a model's reading of a page may not replace OCR's text; "" when it may."""
    if reading.unreadable or not reading.text.strip():
        return "it found no text"
    wanted = units(ocr)
    if not wanted:
        return ""  # OCR read no words: nothing to lose
    kept = sum((wanted & units(reading.text)).values()) / sum(wanted.values())
    if kept < KEEP:
        return f"its text keeps only {kept:.0%} of the words OCR read"
    return ""


def read_scans(
    doc: ParsedDocument,
    path: Path,
    llm: LLM,
    *,
    cancel: threading.Event | None = None,
    on_page: PageRead | None = None,
) -> ParsedDocument:
    """Have the vision model read every page of `doc` that OCR read; keep each reading
    `judge` accepts. Raises CallsCancelled when `cancel` is set, and nothing else."""
    todo = [page for page in doc.pages if page.ocr]
    if not todo:
        return doc
    read: dict[int, Page] = {}
    warnings: list[str] = []
    for start in range(0, len(todo), _GROUP):
        group = todo[start : start + _GROUP]
        failed = _read_group(doc.source, path, group, llm, cancel, read, warnings)
        if on_page is not None:
            on_page(min(start + _GROUP, len(todo)), len(todo))
        if failed == len(group):
            left = len(todo) - start - len(group)
            if left:
                warnings.append(
                    f"{doc.source}: the vision model failed on every page of {len(group)};"
                    f" the {left} page(s) after them keep their OCR text unread."
                )
            break
    pages = tuple(read.get(page.number, page) for page in doc.pages)
    return replace(doc, pages=pages, warnings=doc.warnings + tuple(warnings))


def _read_group(
    source: str,
    path: Path,
    group: list[Page],
    llm: LLM,
    cancel: threading.Event | None,
    read: dict[int, Page],
    warnings: list[str],
) -> int:
    """Read one group of pages into `read`; return how many the model failed on."""
    asked: list[Page] = []
    images: list[dict[str, object]] = []
    for page in group:
        try:
            png = page_png(path, page.number)
        except Exception as exc:  # pdfium rendered it for OCR; whatever fails now costs one page
            warnings.append(_kept(source, page, f"it could not be rendered again ({exc})"))
            continue
        asked.append(page)
        images.append({"page_image": png_url(png)})
    results = llm.call_many(PAGE_READING, images, cancel=cancel) if images else []
    failed = len(group) - len(asked)
    for page, result in zip(asked, results, strict=True):
        if isinstance(result, LLMError):
            failed += 1
            why = str(result).rstrip(".")
        else:
            why = judge(page.text, result)
            if not why:
                read[page.number] = Page(page.number, result.text.strip(), ocr=True)
                continue
        log.info("%s page %d keeps its OCR text: %s", source, page.number, why)
        warnings.append(_kept(source, page, why))
    return failed


def _kept(source: str, page: Page, why: str) -> str:
    return f"{source}: page {page.number} keeps its OCR text, not the vision model's: {why}."
