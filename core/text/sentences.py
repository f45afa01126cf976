"""Whole sentences out of a chunk's text, and what is not one: headings, labels, scope notes.

The one copy of what counts as a sentence for the extractive answer (core/answer.py) and as
evidence for the offline judge (core/ask/judge.py), docs/architecture.md §5 and §6:

- A paragraph is read as one text: a soft line break is not a sentence end, so a sentence
  wrapped over two lines comes out whole. A blank line, a heading, a list item's start, a table
  row and a code fence end a paragraph.
- Sentences end at 。！？； and at . ! ? followed by a space; never inside a code span, a
  Markdown link or a short bracketed aside, nor after an abbreviation ("e.g.").
- Not sentences: headings (Markdown `#` and setext, and the numbered titles, chapters and
  appendices the chunker knows: core/ingest/structure.heading_of), short lines without
  sentence punctuation that stand before a block (a title the parser did not mark), list
  markers alone, a list item that is only a label or only a link to a place in the document (a
  contents entry), a table's header and separator rows, a lead-in
  that ends with a colon, code blocks and HTML comments.
- A table's data row is one sentence, read with its column headers: "3.2.1 验证……。（L1: ✓ ·
  CWE: 384）" (core/text/table_rows.py).
- Each sentence keeps its markup balanced (an unpaired backtick or `**` is dropped) and its
  offsets in the original text, so a reader can highlight it inside the whole chunk.

Where a paragraph's sentences end, and how a piece keeps its markup balanced, is
core/text/sentence_cuts.py.

`is_scope` tells a sentence about the document itself ("本标准适用于…", "This document
describes…"): it is a sentence, but evidence of nothing but the document's scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..ingest.structure import heading_of
from ..models import Hit
from .chinese import CJK
from .english import words
from .sentence_cuts import balanced, join_lines, sentence_spans, source_offset
from .table_rows import row_cells, row_line

__all__ = [
    "Sentence",
    "asks_about_scope",
    "hit_sentences",
    "is_heading",
    "is_scope",
    "sentences_of",
]

Kind = Literal["prose", "item", "row"]


@dataclass(frozen=True)
class Sentence:
    """A whole sentence of a text: as shown, where it lies, and the heading it stands under."""

    text: str  # soft breaks joined, list marker dropped, markup balanced
    start: int  # offset of its first character in the text it came from
    end: int  # offset just past its last character
    kind: Kind  # prose | item (a list item) | row (a table's data row)
    heading: str = ""  # the nearest heading above it in the text (or the context given)


_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+|$)")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_RULE = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_TABLE_ROW = re.compile(r"^\s*\|")
_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$|^\s*!\[[^\]]*\]\([^)]*\)\s*$")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
# "- ", "* ", "1. ", "1) ", "1、", "（1）", "a) ": a marker, then the item's text.
_LIST = re.compile(
    r"^(\s*)(?:[-*+•·▪●○◦](?:\s+|$)|\d{1,3}[.)](?:\s+|$)|\d{1,3}、\s*|[（(]\d{1,3}[)）]\s*|[a-z][.)]\s+)"
)
_WORD = re.compile(r"[A-Za-z0-9]+")
_ANCHOR_LINK = re.compile(r"\[[^\]]+\]\(#[^)\s]*\)[.。]?")  # a link to a place in the text
_TERMINAL = re.compile(r"[。！？；.!?;…]+[”’」』）)\]\"'*`]*$")
_PUNCTUATED = re.compile(r"[。！？；.!?;:：，,、]\W*$")
_INNER_END = re.compile(r"[。！？；]|[.!?]\s")
_COLON_END = re.compile(r"[:：]\W*$")
_CLAUSE = re.compile(
    r"^(?:V\d+(?:\.\d+)*|\d+(?:\.\d+)+|第[一二三四五六七八九十百零〇\d]+[章节条款篇]"
    r"|附\s*录\s*[A-Z一二三四五六七八九十]?)[\s\u3000]*(?P<title>\D.*)$"
)
_LEAD_UNITS = 16  # a colon lead-in this short introduces what follows; a longer one says something
_TITLE_UNITS = 24  # a line this short without sentence punctuation, standing alone, is a title
_ITEM_UNITS = 8  # a list item shorter than this, without sentence punctuation, is a label
_SENTENCE_MIN = 4  # characters; shorter pieces are markers and numbers

# What a scope or purpose note says, for `is_scope`; the question words that ask about scope.
_ZH_SCOPE = re.compile(
    r"^(?:本|该|此)[\u4e00-\u9fff]{0,2}?(?:标准|规范|文档|文件|指南|手册|章节|章|节|部分|附录|清单|示例|指引|办法)"
    r"[^。！？]{0,6}?(?:适用|规定|描述|介绍|概括|概述|给出|旨在|用于|用来|包括|包含|说明|阐述|提供|列出|是|为)"
)
_EN_SCOPE = re.compile(
    r"^(?:(?:this|these|the present)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:document|standard|guideline|guide|chapter|section|checklist|specification|sample|appendix"
    r"|cheat ?sheet|article|paper|tutorial)"
    r"|(?:the|a|an)\s+(?:[\w-]+\s+){0,2}?(?:document|guideline|guide|checklist|specification|sample))"
    r"s?\b[^.!?]{0,24}?\b(?:describe|cover|appl(?:y|ies)|specif(?:y|ies)|provide|outline|complement"
    r"|explain|introduce|ship|summari[sz]e|present|set|give|contain|list|is|are|aim|intend"
    r"|help|advise|focus|discuss|show)",
    re.I,
)
_SCOPE_TITLES = words(
    "范围 适用范围 目的 概述 引言 前言 简介 说明 scope purpose overview introduction"
)
_SCOPE_QUESTION = re.compile(
    r"适用|范围|目的|用途|宗旨|概述|\b(?:scope|purpose|appl(?:y|ies|icable)|covers?)\b", re.I
)


def _units(text: str) -> int:
    return len(CJK.findall(text)) + 2 * len(_WORD.findall(text))


def _ends_sentence(line: str) -> bool:
    return bool(_TERMINAL.search(line.rstrip()))


def _title_like(line: str, limit: int = _TITLE_UNITS) -> bool:
    """Short, and without the punctuation a sentence or a clause ends with."""
    text = line.strip().strip("*_`").strip()
    lower = text[:1].isascii() and text[:1].islower()
    return (
        0 < _units(text) <= limit
        and not _PUNCTUATED.search(text)
        and not _INNER_END.search(text)
        and not lower
    )


def _block_start(line: str) -> bool:
    """A line that opens a block of its own: a heading, a list item, a table row, a fence."""
    return bool(
        _ATX.match(line) or _LIST.match(line) or _TABLE_ROW.match(line) or _FENCE.match(line)
    )


def is_heading(line: str, *, before: str | None = None, after: str | None = None) -> bool:
    """Tell whether `line` is a heading, given the lines around it (None: the text's edge).

    A line that continues an unfinished sentence of the line before is never one: "10 个字符"
    at the start of a wrapped line is not clause 10.
    """
    text = line.strip()
    if not text:
        return False
    if _ATX.match(line):
        return True
    if _LIST.match(line):
        return False  # a list item, labels included
    if after is not None and _SETEXT.match(after) and not _RULE.match(line):
        return True
    wrapped = before is not None and before.strip() and not _ends_sentence(before)
    if wrapped and not _ATX.match(before or ""):
        return False  # a wrapped line of the paragraph above
    found = heading_of(text, markdown=False)
    if found is not None and _squash(found[1]) == _squash(text):
        return True  # the whole line is the title (not "6.2.3 验证……。", a clause with its text)
    if " > " in text and all(_title_like(part, 40) for part in text.split(" > ")):
        return True  # a heading path, "title > section"
    if not _title_like(text):
        return False
    if after is None or not after.strip() or _block_start(after):
        return True  # stands alone before a block
    # Before a text line: a title when clearly shorter than it (a wrapped line is as long).
    return 2 * len(text) <= len(after.strip()) and _units(text) <= _TITLE_UNITS // 2 + 4


def _title_of(heading: str) -> str:
    found = heading_of(heading.strip(), markdown=False)
    return found[1] if found is not None else heading.strip()


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def is_scope(sentence: str) -> bool:
    """Tell whether a sentence is about the document itself: its scope, purpose or nature."""
    text = sentence.strip().strip("*_#").strip()
    if _squash(text).rstrip("：:。.").casefold() in _SCOPE_TITLES:
        return True
    return bool(_ZH_SCOPE.match(text) or _EN_SCOPE.match(text))


def asks_about_scope(question: str) -> bool:
    """Tell whether a question asks what a document covers, where scope notes are the answer."""
    return bool(_SCOPE_QUESTION.search(question))


# --- splitting --------------------------------------------------------------------------------


@dataclass
class _Block:
    """One paragraph or list item being read: its lines' content spans in the text."""

    kind: Kind
    spans: list[tuple[int, int]]
    heading: str


def hit_sentences(hit: Hit, *, scope_ok: bool = False) -> list[Sentence]:
    """A search hit's whole sentences, as answers quote them and the offline judge reads them.

    A chunk that continues a long section has no heading line of its own: its heading path
    names the section. Scope notes are left out unless `scope_ok` (the question asks about
    scope, `asks_about_scope`).
    """
    context = hit.heading_path[-1] if hit.heading_path else ""
    found = sentences_of(hit.text, heading=context)
    return found if scope_ok else [s for s in found if not is_scope(s.text)]


def sentences_of(text: str, *, heading: str = "") -> list[Sentence]:
    """Split a chunk's text into whole sentences, in order, leaving out what is not one.

    `heading` is the section the text starts in when its own heading is not in it (a chunk
    that continues a long section: its `Hit.heading_path`).
    """
    return _Reader(text, heading).read()


class _Reader:
    """One pass over the lines: blocks are gathered, then cut into sentences."""

    def __init__(self, text: str, heading: str) -> None:
        self.text = text
        self.lines: list[tuple[int, str]] = []
        offset = 0
        for line in text.split("\n"):
            self.lines.append((offset, line))
            offset += len(line) + 1
        self.heading = heading
        self.block: _Block | None = None
        self.out: list[Sentence] = []
        self.head: list[str] = []  # the labels of the table being read

    def read(self) -> list[Sentence]:
        index, lines = 0, self.lines
        while index < len(lines):
            start, line = lines[index]
            before = lines[index - 1][1] if index else None
            after = lines[index + 1][1] if index + 1 < len(lines) else None
            if _FENCE.match(line):
                index = self._skip_code(index)
                continue
            if not line.strip() or _COMMENT.match(line) or _RULE.match(line):
                self._close()
            elif _TABLE_ROW.match(line):
                self._close()
                self._row(start, line, before, after)
            elif is_heading(
                line, before=before if self.block or before is None else "", after=after
            ):
                self._close()
                self.heading = _title_of(line)
                if after is not None and _SETEXT.match(after):
                    index += 1  # its underline
            elif marker := _LIST.match(line):
                self._close()
                self.block = _Block(
                    "item", [(start + marker.end(), start + len(line))], self.heading
                )
            else:
                quote = _QUOTE.match(line)
                begin = start + (quote.end() if quote else len(line) - len(line.lstrip()))
                if self.block is None:
                    self.block = _Block("prose", [], self.heading)
                self.block.spans.append((begin, start + len(line.rstrip())))
            index += 1
        self._close()
        return self.out

    def _skip_code(self, index: int) -> int:
        self._close()
        index += 1
        while index < len(self.lines) and not _FENCE.match(self.lines[index][1]):
            index += 1
        return index + 1

    def _row(self, start: int, line: str, before: str | None, after: str | None) -> None:
        cells = row_cells(line)
        if _SEPARATOR_ROW.match(line):
            return
        if after is not None and _SEPARATOR_ROW.match(after):
            self.head = cells  # the header row: its labels name the cells below
            return
        first = before is None or not _TABLE_ROW.match(before)
        if first:
            self.head = []
            if all(_title_like(c, 16) or not c for c in cells):
                self.head = cells  # a header row without its separator: labels only
                return
        shown = balanced(row_line(cells, self.head))
        if not shown:
            return
        lead = len(line) - len(line.lstrip())
        self.out.append(
            Sentence(shown, start + lead, start + len(line.rstrip()), "row", self.heading)
        )

    def _close(self) -> None:
        block, self.block = self.block, None
        if block is None or not block.spans:
            return
        joined, starts = join_lines(self.text, block.spans)
        pieces = sentence_spans(joined)
        heading = block.heading
        for number, (a, b) in enumerate(pieces, start=1):
            raw = joined[a:b]
            stripped = raw.strip()
            if len(stripped) < _SENTENCE_MIN:
                continue
            if _numbered_title(stripped):  # "V7 日志记录。Java 应用的日志……": a title run in
                heading = self.heading = stripped.rstrip("。.：: ")
                continue
            a += len(raw) - len(raw.lstrip())
            b -= len(raw) - len(raw.rstrip())
            if not self._is_sentence(stripped, block, number == len(pieces), len(pieces)):
                continue
            self.out.append(
                Sentence(
                    balanced(stripped),
                    source_offset(starts, a),
                    source_offset(starts, b - 1) + 1,
                    block.kind,
                    heading,
                )
            )

    @staticmethod
    def _is_sentence(text: str, block: _Block, last: bool, pieces: int) -> bool:
        if _COLON_END.search(text) and (last or _units(text) <= _LEAD_UNITS):
            return False  # "要求如下：" introduces what follows and says nothing itself
        if block.kind == "item" and _ANCHOR_LINK.fullmatch(text):
            return False  # "- [Federated Identity Terms](#…)": a contents entry, not a statement
        if block.kind == "item" and pieces == 1 and not _ends_sentence(text):
            return _units(text) >= _ITEM_UNITS  # "- 会话管理" is a label, not a statement
        return not (pieces == 1 and block.kind == "prose" and _title_like(text, 12))


def _numbered_title(piece: str) -> bool:
    """A clause number or chapter and a short title, ended like a sentence ("V3.2 会话绑定。")."""
    found = _CLAUSE.match(piece.rstrip("。.：: "))
    return found is not None and _title_like(found.group("title"), 40)
