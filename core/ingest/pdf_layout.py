"""Page geometry to text: characters to words to lines, borderless tables, and page assembly.

Pure functions over plain records (coordinates are top-down, in PDF points), so the layout rules
can be tested without a PDF. `pdf_page` feeds them from pypdfium2 and pdfplumber.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median

from ..text.chinese import CJK
from .tables import is_cjk, markdown_table

__all__ = [
    "Char",
    "Line",
    "Rule",
    "TableBlock",
    "Word",
    "assemble_page",
    "build_lines",
    "build_words",
    "reading_order",
]

_LATIN_WORD = re.compile(r"[A-Za-z]+")
# Sentence ends, leaders of a table of contents, or nothing but a number: not a heading.
_NOT_HEADING = re.compile(r"[。；;，,:：]$|\.{4,}|…{2,}|^[\d\s.]+$")


@dataclass(frozen=True)
class Char:
    """One glyph: its text, its box, and the whitespace before it in the content stream.

    `space_before` is a space the PDF itself has; `soft_space_before` one that pdfium inferred
    from spacing, which is also what it does at a switch from a Latin to a CJK font.
    """

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    space_before: bool = False
    soft_space_before: bool = False
    size: float = 10.0


@dataclass
class Word:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    space_before: bool = False
    soft_space_before: bool = False
    size: float = 10.0

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2


@dataclass
class Line:
    words: list[Word] = field(default_factory=list)

    @property
    def x0(self) -> float:
        return min(w.x0 for w in self.words)

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)

    @property
    def top(self) -> float:
        return min(w.top for w in self.words)

    @property
    def bottom(self) -> float:
        return max(w.bottom for w in self.words)

    @property
    def height(self) -> float:
        return median(w.height for w in self.words)

    @property
    def size(self) -> float:
        """The font size most of the line's characters have."""
        weights: dict[float, int] = {}
        for word in self.words:
            weights[word.size] = weights.get(word.size, 0) + len(word.text)
        return max(weights, key=lambda size: (weights[size], size))

    @property
    def text(self) -> str:
        parts: list[str] = []
        previous: Word | None = None
        for word in self.words:
            if previous is not None and _needs_space(previous, word):
                parts.append(" ")
            parts.append(word.text)
            previous = word
        return "".join(parts)


@dataclass(frozen=True)
class Rule:
    """A thin horizontal path segment (a drawn line or a hairline rectangle)."""

    x0: float
    x1: float
    y: float


@dataclass
class TableBlock:
    """A table found on a page: where it sits, and its rows (the first row is the header)."""

    top: float
    bottom: float
    rows: list[list[str]]
    x0: float = 0.0
    x1: float = 0.0

    @property
    def markdown(self) -> str:
        return markdown_table(self.rows)


def _needs_space(left: Word, right: Word) -> bool:
    gap = right.x0 - left.x1
    height = min(left.height, right.height)
    if right.space_before:
        return gap > -0.5
    if is_cjk(left.text[-1]) or is_cjk(right.text[0]):
        # Word sets a small gap between CJK and Latin text; it is spacing, not a space.
        return gap > 0.5 * height
    # Without a space character, a gap of about a quarter em is still a word space.
    return gap > (0.1 if right.soft_space_before else 0.25) * height


def build_words(chars: Iterable[Char]) -> list[Word]:
    """Group glyphs in content-stream order into words: split at whitespace and at jumps."""
    words: list[Word] = []
    current: Word | None = None
    previous: Char | None = None
    for char in chars:
        if char.text.isspace() or not char.text:
            previous = None
            if current is not None:
                words.append(current)
                current = None
            continue
        if previous is not None and _is_duplicate(previous, char):
            continue  # fake bold: the same glyph drawn twice at almost the same place
        if current is not None and previous is not None and _continues(previous, char):
            current.text += char.text
            current.x1 = max(current.x1, char.x1)
            current.top = min(current.top, char.top)
            current.bottom = max(current.bottom, char.bottom)
        else:
            if current is not None:
                words.append(current)
            current = Word(
                char.text,
                char.x0,
                char.x1,
                char.top,
                char.bottom,
                char.space_before,
                char.soft_space_before,
                char.size,
            )
        previous = char
    if current is not None:
        words.append(current)
    return words


def _is_duplicate(a: Char, b: Char) -> bool:
    return a.text == b.text and abs(a.x0 - b.x0) < 1.0 and abs(a.top - b.top) < 1.0


def _continues(previous: Char, char: Char) -> bool:
    height = max(previous.bottom - previous.top, char.bottom - char.top, 1.0)
    same_line = abs((previous.top + previous.bottom) - (char.top + char.bottom)) / 2 < 0.5 * height
    gap = char.x0 - previous.x1
    return same_line and -0.5 * height < gap < 0.2 * height


def build_lines(words: Sequence[Word]) -> list[Line]:
    """Cluster words into visual lines (top to bottom), each line's words left to right."""
    lines: list[Line] = []
    for word in sorted(words, key=lambda w: (w.top, w.x0)):
        line = lines[-1] if lines else None
        if line is not None and _same_line(line, word):
            line.words.append(word)
        else:
            lines.append(Line([word]))
    for line in lines:
        line.words.sort(key=lambda w: w.x0)
    return lines


def _same_line(line: Line, word: Word) -> bool:
    last = line.words[-1]
    overlap = min(last.bottom, word.bottom) - max(last.top, word.top)
    return overlap >= 0.5 * min(last.height, word.height)


def reading_order(lines: Sequence[Line]) -> list[Line]:
    """Put the lines of a multi-column page in reading order: each column top to bottom.

    Lines are first clustered across the whole page, so on a two-column page each "line" holds
    a line of both columns. A gutter is an x position that many lines span but almost no word
    covers. Lines that cross a gutter (a title, a running header) stay whole; between them,
    each band of lines is re-read column by column.
    """
    gutters = _gutters(lines)
    if not gutters:
        return list(lines)
    out: list[Line] = []
    band: list[Line] = []
    for line in lines:
        if any(w.x0 < g < w.x1 for w in line.words for g in gutters):
            out.extend(_columns(band, gutters))
            band = []
            out.append(line)
        else:
            band.append(line)
    out.extend(_columns(band, gutters))
    return out


def _columns(band: list[Line], gutters: list[float]) -> list[Line]:
    edges = [float("-inf"), *gutters, float("inf")]
    out: list[Line] = []
    for left, right in zip(edges, edges[1:], strict=False):
        words = [w for ln in band for w in ln.words if left <= (w.x0 + w.x1) / 2 < right]
        out.extend(build_lines(words))
    return out


def _gutters(lines: Sequence[Line]) -> list[float]:
    if len(lines) < 10:
        return []
    start = int(min(ln.x0 for ln in lines))
    stop = int(max(ln.x1 for ln in lines)) + 1
    width = stop - start
    span = [0] * width
    cover = [0] * width
    for line in lines:
        for x in range(max(0, int(line.x0) - start), min(width, int(line.x1) - start)):
            span[x] += 1
        for word in line.words:
            for x in range(max(0, int(word.x0) - start), min(width, int(word.x1) + 1 - start)):
                cover[x] += 1
    need = max(8, 0.4 * len(lines))
    # A title or running header may cross the gutter; a tenth of the lines may cover it.
    empty = [span[x] >= need and cover[x] <= 0.1 * span[x] for x in range(width)]
    gutters: list[float] = []
    x = 0
    while x < width:
        if not empty[x]:
            x += 1
            continue
        run = x
        while x < width and empty[x]:
            x += 1
        # A gutter is a few points wide, with a real column on each side of it.
        middle = start + (run + x) / 2
        left_edge = gutters[-1] if gutters else start
        if x - run >= 5 and middle - left_edge >= 0.15 * width and stop - middle >= 0.15 * width:
            gutters.append(middle)
    return gutters


def assemble_page(lines: Sequence[Line], tables: Sequence[TableBlock], skip: set[int]) -> str:
    """Write a page's text: lines top to bottom, tables as Markdown where they sat.

    A blank line marks a paragraph gap and surrounds each table, so the chunker sees paragraphs
    and whole tables. A gap counts as a paragraph break when the distance between two lines is
    clearly more than the page's usual line pitch: leading varies a lot between documents.
    Short lines set clearly larger than the body text become Markdown headings.
    """
    kept = [line for index, line in enumerate(lines) if index not in skip]
    pitch = _line_pitch(kept)
    body = _body_size(kept)
    items: list[tuple[float, int, str, Line | None]] = [
        (ln.top, 1, _heading_text(ln, body), ln) for ln in kept
    ]
    if tables:  # lines come top to bottom here; put each table where it sat
        items += [(table.top, 0, table.markdown, None) for table in tables]
        items.sort(key=lambda item: (item[0], item[1]))
    out: list[str] = []
    previous: Line | None = None
    for index, (_, _, text, line) in enumerate(items):
        heading = text.startswith("#") and line is not None
        if index > 0 and (
            line is None or previous is None or heading or _paragraph_gap(previous, line, pitch)
        ):
            out.append("")
        out.append(text)
        previous = None if heading else line  # a heading ends its paragraph
    return "\n".join(out)


def _body_size(lines: Sequence[Line]) -> float:
    weights: dict[float, int] = {}
    for line in lines:
        for word in line.words:
            weights[word.size] = weights.get(word.size, 0) + len(word.text)
    return max(weights, key=lambda size: (weights[size], -size)) if weights else 0.0


def _heading_text(line: Line, body: float) -> str:
    text = line.text
    if body <= 0 or line.size < 1.2 * body:
        return text
    units = len(CJK.findall(text)) + 2 * len(_LATIN_WORD.findall(text))
    if not 0 < units <= 40 or _NOT_HEADING.search(text) or text.startswith(("#", "|")):
        return text
    return ("# " if line.size >= 1.5 * body else "## ") + text


def _line_pitch(lines: Sequence[Line]) -> float | None:
    pitches = [
        b.top - a.top
        for a, b in zip(lines, lines[1:], strict=False)
        if abs(a.height - b.height) < 0.2 * a.height and b.top > a.top
    ]
    return median(pitches) if len(pitches) >= 3 else None


def _paragraph_gap(previous: Line, line: Line, pitch: float | None) -> bool:
    height = max(previous.height, line.height, 1.0)
    if pitch is None or pitch > 3 * height:
        return line.top - previous.bottom > 0.8 * height
    return line.top - previous.top > pitch + 0.4 * height
