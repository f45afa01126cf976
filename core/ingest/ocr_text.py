"""Turn what OCR found on a page (text boxes) into the page's text, and tell a text layer that is
garbage from one worth keeping. Pure functions: the engine is core/ingest/ocr.py.

A scanned page is seldom straight, so the boxes are first turned back by the page's skew (the
median slope of the long boxes); then they are clustered into lines and read column by column as
a text page's glyphs are (core/ingest/pdf_layout.py). Rows of two or more boxes whose left edges
line up, two rows or more, are a table. Wrapped lines are rejoined into sentences: CJK without a
space, Latin with one, a word hyphenated at a line's end whole again.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from .pdf_layout import Line, TableBlock, Word, build_lines, reading_order
from .tables import join_fragments

__all__ = ["Box", "garbled", "page_text"]

# A text layer is garbage when this share of its visible characters are private-use, unassigned
# or replacement characters: what a PDF's fonts give without a Unicode map. A real page in any
# script has (almost) none; a broken one has mostly such characters.
GARBLED_SHARE = 0.3
# A line that ends this many line heights short of the text's right edge ends its paragraph.
_SHORT_LINE = 2.0
# The cells of a table row start within this many line heights of the row above's.
_COLUMN_SLACK = 1.5
_SENTENCE_END = re.compile(r"[。！？；：.!?;:」』）)]$")
# A clause number ("3.2 ", "A.1 "), a list marker or a table caption starts a new paragraph.
_NEW_CLAUSE = re.compile(r"^(\d+(\.\d+)*|[A-Z](\.\d+)+|[（(]?\d+[)）]|[a-z][)）]|[•·\-–]|表\s*\d)")
_HYPHENATED = re.compile(r"[A-Za-z]-$")
# OCR drops the space between a clause number and CJK text ("3.1用户"); the headings and the
# chunker read "3.1 用户".
_CLAUSE_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)(?=[\u4e00-\u9fff])")


@dataclass(frozen=True)
class Box:
    """One text box OCR found: its text and its four corners (x, y), clockwise from top left."""

    text: str
    corners: tuple[tuple[float, float], ...]


def garbled(text: str) -> bool:
    """Tell whether a page's text layer is garbage (see GARBLED_SHARE) and OCR should read it."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return False
    bad = sum(1 for c in visible if c == "\ufffd" or unicodedata.category(c) in ("Co", "Cn"))
    return bad >= GARBLED_SHARE * len(visible)


def page_text(boxes: Sequence[Box]) -> tuple[str, int]:
    """Write a page's text from its OCR boxes; return it and how many tables it holds."""
    words = _straightened(boxes)
    if not words:
        return "", 0
    lines = build_lines(words)
    blocks = _tables(lines)
    if not any(isinstance(b, TableBlock) for b in blocks):  # as a text page's: core/ingest/pdf_page
        blocks = list(reading_order(lines))
    text_lines = [b for b in blocks if isinstance(b, Line)]
    out: list[str] = []
    paragraph: list[Line] = []

    def close() -> None:
        if paragraph:
            out.append(_joined(paragraph))
            paragraph.clear()

    for block in blocks:
        if isinstance(block, TableBlock):
            close()
            out += ["", block.markdown, ""]
        elif paragraph and _continues(paragraph[-1], block, _right_edge(paragraph[-1], text_lines)):
            paragraph.append(block)
        else:
            close()
            paragraph.append(block)
    close()
    text = "\n".join(out).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text), sum(isinstance(b, TableBlock) for b in blocks)


def _straightened(boxes: Sequence[Box]) -> list[Word]:
    """The boxes as words, turned back by the page's skew so that a line's boxes share a row."""
    kept = [b for b in boxes if b.text.strip() and len(b.corners) == 4]
    slopes = []
    for box in kept:
        (x0, y0), (x1, y1) = box.corners[0], box.corners[1]
        height = math.dist(box.corners[0], box.corners[3])
        if x1 - x0 > 4 * max(height, 1.0):  # short boxes tell the angle poorly
            slopes.append(math.atan2(y1 - y0, x1 - x0))
    angle = -median(slopes) if slopes else 0.0
    cos, sin = math.cos(angle), math.sin(angle)
    words = []
    for box in kept:
        xs = [x * cos - y * sin for x, y in box.corners]
        ys = [x * sin + y * cos for x, y in box.corners]
        top, bottom = min(ys), max(ys)
        text = box.text.strip()
        words.append(Word(text, min(xs), max(xs), top, bottom, size=bottom - top))
    return words


def _tables(lines: list[Line]) -> list[Line | TableBlock]:
    """The lines, with each run of two or more aligned multi-box rows made a table."""
    out: list[Line | TableBlock] = []
    run: list[Line] = []

    def close() -> None:
        if len(run) >= 2 and not _text_columns(run):
            rows = [[w.text for w in line.words] for line in run]
            top, bottom = run[0].top, run[-1].bottom
            out.append(TableBlock(top, bottom, rows, min(ln.x0 for ln in run), run[0].x1))
        else:
            out.extend(run)
        run.clear()

    for line in lines:
        if len(line.words) >= 2 and _gapped(line) and (not run or _aligned(run[-1], line)):
            run.append(line)
        else:
            close()
            if len(line.words) >= 2 and _gapped(line):
                run.append(line)
            else:
                out.append(line)
    close()
    return out


def _text_columns(run: Sequence[Line]) -> bool:
    """Whether aligned rows are two columns of text rather than a table: two boxes a row, each
    wider than a third of the run (a table's cells are mostly narrower)."""
    width = max(ln.x1 for ln in run) - min(ln.x0 for ln in run)
    if any(len(line.words) != 2 for line in run):
        return False
    return median(min(w.x1 - w.x0 for w in line.words) for line in run) > width / 3


def _right_edge(line: Line, lines: Sequence[Line]) -> float:
    """Where the text column that holds `line` ends: the right end of the lines beside it."""
    return max(ln.x1 for ln in lines if ln.x0 < line.x1 and line.x0 < ln.x1)


def _gapped(line: Line) -> bool:
    """Whether a line's boxes stand apart like cells (OCR splits a line at wide spaces only)."""
    return all(
        b.x0 - a.x1 > 1.5 * line.height for a, b in zip(line.words, line.words[1:], strict=False)
    )


def _aligned(above: Line, line: Line) -> bool:
    if len(above.words) != len(line.words):
        return False
    slack = _COLUMN_SLACK * max(above.height, line.height)
    return all(abs(a.x0 - b.x0) <= slack for a, b in zip(above.words, line.words, strict=True))


def _continues(previous: Line, line: Line, right: float) -> bool:
    """Whether `line` carries on the paragraph that `previous` ends: a wrapped line."""
    before, text = previous.text, line.text
    height = max(previous.height, line.height, 1.0)
    if previous.x1 < right - _SHORT_LINE * height or line.top - previous.bottom > height:
        return False
    return not _SENTENCE_END.search(before) and not _NEW_CLAUSE.match(text)


def _joined(lines: Sequence[Line]) -> str:
    text = ""
    for line in lines:
        part = line.text
        if _HYPHENATED.search(text) and part[:1].islower():
            text = text[:-1] + part
        else:
            text = join_fragments(text, part)
    return _CLAUSE_NUMBER.sub(r"\1 ", text)
