"""Cut a parsed document into chunks along its structure (a pure function).

Sections (from headings) are cut into blocks, blocks into pieces that fit (paragraph, then
sentence, then line, then a hard cut), and pieces are packed into chunks of at most `max_units`.
A unit is one CJK character or half a Latin word, so 800 units is about 800 Chinese characters
or 400 English words. Consecutive chunks of one section share a trailing sentence or so. A
table split across chunks repeats its header row, so each chunk's rows can be read alone.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Chunk, ParsedDocument
from .structure import Block, split_blocks

__all__ = ["chunk_document", "count_units", "split_sentences"]

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")
_WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f\u0370-\u04ff]+(?:['’.\-][A-Za-z0-9\u00c0-\u024f]+)*")
_SENTENCE = re.compile(r"[。！？；!?…]+[”’」』）)\]\"']*|[.!?]+[”’\"')\]]*(?=\s)")
_TOKEN = re.compile(_CJK.pattern + "|" + _WORD.pattern + r"|\s+|.", re.S)
_SOFT_BREAK = re.compile(r"\s|[，、,;；:：]")
_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}")


def count_units(text: str) -> int:
    """Measure text in units: each CJK character is 1, each Latin word (or number) is 2."""
    return len(_CJK.findall(text)) + 2 * len(_WORD.findall(text))


def split_sentences(text: str, start: int = 0) -> list[tuple[int, int]]:
    """Return (start, end) offsets of the sentences in text (offset by `start`)."""
    spans, begin = [], 0
    for found in _SENTENCE.finditer(text):
        if text[begin : found.end()].strip():
            spans.append((begin, found.end()))
            begin = found.end()
    if text[begin:].strip():
        spans.append((begin, len(text)))
    return [(start + a, start + b) for a, b in spans]


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    units: int
    kind: str  # heading | text | sentence | row | head | code | cut
    path: tuple[str, ...]
    section: int
    table: int = -1  # index of the table block a row belongs to
    head: tuple[int, int] | None = None  # that table's header rows (offsets)


def chunk_document(
    doc: ParsedDocument, *, max_units: int = 800, overlap_units: int = 80
) -> list[Chunk]:
    """Cut `doc` into chunks of at most about `max_units`, each with its heading path and place."""
    if max_units < 1:
        raise ValueError(f"max_units must be at least 1, not {max_units}.")
    if not 0 <= overlap_units < max_units:
        raise ValueError(f"overlap_units must be between 0 and max_units - 1, not {overlap_units}.")
    text = "\n".join(page.text for page in doc.pages)
    blocks = split_blocks(text, markdown=doc.kind == "markdown")
    pieces = [p for i, b in enumerate(blocks) for p in _Splitter(text, b, i, max_units).pieces()]
    packed = [
        c for c in _Packer(text, max_units, overlap_units).pack(pieces) if text[c[0] : c[1]].strip()
    ]
    locator = _Locator(text, doc)
    return [locator.chunk(ordinal, chunk) for ordinal, chunk in enumerate(packed)]


class _Splitter:
    """Cut one block into pieces of at most max_units: sentences, then lines, then hard cuts."""

    def __init__(self, text: str, block: Block, index: int, max_units: int) -> None:
        self.text = text
        self.block = block
        self.index = index
        self.max = max_units

    def piece(self, start: int, end: int, kind: str, head: tuple[int, int] | None = None) -> _Piece:
        units = count_units(self.text[start:end])
        table = self.index if head is not None else -1
        return _Piece(start, end, units, kind, self.block.path, self.block.section, table, head)

    def pieces(self) -> list[_Piece]:
        block = self.block
        if block.kind == "table":
            return self._table()
        whole = self.piece(block.start, block.end, block.kind)
        if whole.units <= self.max:
            return [whole]
        if block.kind == "text":
            spans = split_sentences(self.text[block.start : block.end], block.start)
            kind = "sentence"
        else:  # code and over-long headings: by line
            spans, kind = [(block.start, block.end)], "code" if block.kind == "code" else "cut"
        return [p for a, b in spans for p in self._fit(self.piece(a, b, kind))]

    def _fit(self, item: _Piece) -> list[_Piece]:
        """Split a piece that is still too big at line breaks, then by a hard cut."""
        if item.units <= self.max:
            return [item]
        out: list[_Piece] = []
        for start, end in _line_spans(self.text, item.start, item.end):
            line = self.piece(start, end, item.kind, item.head)
            out.extend([line] if line.units <= self.max else self._hard_cut(line))
        return out

    def _table(self) -> list[_Piece]:
        spans = _line_spans(self.text, self.block.start, self.block.end)
        second = self.text[spans[1][0] : spans[1][1]] if len(spans) > 1 else ""
        head_end = 2 if _SEPARATOR_ROW.match(second) else 1
        head = (spans[0][0], spans[head_end - 1][1])
        out = self._fit(self.piece(*head, "head", head))
        for start, end in spans[head_end:]:
            out.extend(self._fit(self.piece(start, end, "row", head)))
        return out

    def _hard_cut(self, item: _Piece) -> list[_Piece]:
        """Last resort: cut at the last soft break (space, comma) that keeps within max_units."""
        text = self.text
        out, begin, units, soft = [], item.start, 0, -1
        for token in _TOKEN.finditer(text, item.start, item.end):
            cost = count_units(token.group())
            if units + cost > self.max and units > 0:
                cut = soft if soft > begin else token.start()
                out.append(self.piece(begin, cut, "cut"))
                begin, units, soft = cut, count_units(text[cut : token.start()]), -1
            units += cost
            if _SOFT_BREAK.match(token.group()):
                soft = token.end()
        if text[begin : item.end].strip():
            out.append(self.piece(begin, item.end, "cut"))
        return out


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, begin = [], start
    while begin < end:
        stop = text.find("\n", begin, end)
        stop = end if stop < 0 else stop
        if text[begin:stop].strip():
            spans.append((begin, stop))
        begin = stop + 1
    return spans


# A packed chunk: start and end offsets, its pieces, and a table header to repeat before it.
_Packed = tuple[int, int, list["_Piece"], str]


class _Packer:
    """Greedy packing of pieces into chunks; a chunk is (start, end, pieces, head prefix)."""

    def __init__(self, text: str, max_units: int, overlap_units: int) -> None:
        self.text = text
        self.max = max_units
        self.overlap = overlap_units
        # Sections smaller than this join a neighbour under the same parent.
        self.min = max(1, max_units // 10)

    def pack(self, pieces: Sequence[_Piece]) -> list[_Packed]:
        chunks: list[_Packed] = []
        section_units: dict[int, int] = {}
        for p in pieces:
            section_units[p.section] = section_units.get(p.section, 0) + p.units
        current: list[_Piece] = []
        start, units, prefix = 0, 0, ""
        for p in pieces:
            if current and p.section != current[-1].section:
                if not self._merges(current, units, p, section_units[p.section]):
                    chunks.append((start, current[-1].end, current, prefix))
                    current = []
            elif current and units + p.units > self.max:
                carried = current.pop() if current[-1].kind == "head" and len(current) > 1 else None
                chunks.append((start, current[-1].end, current, prefix))
                overlap = None if carried else self._overlap(current, start, p)
                current = []
                if carried is not None:  # a table header goes with its first rows
                    start, units, prefix, current = carried.start, carried.units, "", [carried]
                elif overlap is not None:
                    start, units, prefix = overlap, count_units(self.text[overlap : p.start]), ""
                    current = [p]
                    units += p.units
                    continue
            if not current:
                start, units, prefix = p.start, 0, ""
                if p.kind == "row" and p.head is not None:
                    head = self.text[p.head[0] : p.head[1]]
                    if count_units(head) + p.units <= self.max:
                        prefix, units = head, count_units(head)
            current.append(p)
            units += p.units
        if current:
            chunks.append((start, current[-1].end, current, prefix))
        return chunks

    def _merges(self, current: list[_Piece], units: int, nxt: _Piece, nxt_units: int) -> bool:
        here, there = current[-1].path, nxt.path
        same_parent = there[: max(len(here) - 1, 0)] == here[:-1]
        if not same_parent:
            return False
        if units < self.min:
            return units + nxt.units <= self.max
        return nxt_units < self.min and units + nxt_units <= self.max

    def _overlap(self, current: list[_Piece], start: int, nxt: _Piece) -> int | None:
        last = current[-1]
        if (
            self.overlap == 0
            or last.kind not in ("text", "sentence")
            or nxt.section != last.section
        ):
            return None
        if nxt.kind not in ("text", "sentence", "cut"):
            return None
        begin, taken = None, 0
        for a, b in reversed(split_sentences(self.text[last.start : last.end], last.start)):
            cost = count_units(self.text[a:b])
            if taken + cost > self.overlap:
                break
            begin, taken = a, taken + cost
        if begin is None or begin <= start or taken + nxt.units > self.max:
            return None
        return begin


class _Locator:
    """Map character offsets of the joined text to 1-based lines, and lines to page numbers."""

    def __init__(self, text: str, doc: ParsedDocument) -> None:
        self.text = text
        self.line_offsets = [0] + [m.end() for m in re.finditer("\n", text)]
        self.page_lines: list[int] = []  # the first line of each page
        line = 1
        for page in doc.pages:
            self.page_lines.append(line)
            line += page.text.count("\n") + 1
        self.numbers = [page.number for page in doc.pages] or [1]
        self.ocr_pages = {page.number for page in doc.pages if page.ocr}

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.line_offsets, offset)

    def page(self, line: int) -> int:
        return self.numbers[max(0, bisect.bisect_right(self.page_lines, line) - 1)]

    def chunk(self, ordinal: int, packed: _Packed) -> Chunk:
        start, end, pieces, prefix = packed
        body = self.text[start:end]
        start += len(body) - len(body.lstrip())
        end = max(start + 1, end - (len(body) - len(body.rstrip())))
        line_start, line_end = self.line(start), self.line(end - 1)
        body = self.text[start:end]
        first, last = self.page(line_start), self.page(line_end)
        return Chunk(
            ordinal=ordinal,
            text=f"{prefix}\n{body}" if prefix else body,
            heading_path=_heading_path(pieces),
            page_start=first,
            page_end=last,
            line_start=line_start,
            line_end=line_end,
            ocr=any(first <= n <= last for n in self.ocr_pages),
        )


def _heading_path(pieces: Sequence[_Piece]) -> tuple[str, ...]:
    """The path all pieces share; the last section's path when what precedes it is only the
    headings of its ancestors (a chapter heading that leads straight into its first section)."""
    last = pieces[-1].path
    before = [p for p in pieces if p.section != pieces[-1].section]
    if all(p.kind == "heading" and last[: len(p.path)] == p.path for p in before):
        return last
    common = pieces[0].path
    for piece in pieces[1:]:
        size = 0
        while size < min(len(common), len(piece.path)) and common[size] == piece.path[size]:
            size += 1
        common = common[:size]
    return common
