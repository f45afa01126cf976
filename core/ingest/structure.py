"""Find a document's structure in its text: headings, sections, and the blocks inside them.

Headings are Markdown `#` lines (and setext underlines), and, outside Markdown files, numbered
clauses (`6.2.3.4 标题`, `V5.3 输出编码`, `1 范围`), Chinese chapter and article markers
(`第三章`, `第3条`) and appendices (`附录A`). Blocks are headings, paragraphs, Markdown tables and
fenced code, each located by character offsets into the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.chinese import CJK

__all__ = ["Block", "heading_of", "split_blocks"]

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_MULTI = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){1,5})\.?([ \t\u3000]+|(?=[\u4e00-\u9fff]))(\D.*)$")
_SINGLE = re.compile(r"^(\d{1,2})[ \t\u3000]+(\D.*)$")
_VERSIONED = re.compile(r"^(V\d{1,2}(?:\.\d{1,3}){0,4})([ \t\u3000]+|(?=[\u4e00-\u9fff]))(\D.*)$")
# "4.0版", "2021年", "3.5倍": a number and its measure word, not a clause number and its title.
_MEASURE = re.compile(r"^[版年月日号时分秒倍个次元%％]")
_APPENDIX = re.compile(r"^(附\s*录\s*[A-Z一二三四五六七八九十]?)(?![A-Za-z0-9])\s*[:：]?\s*(.*)$")
_CN_NUMBER = "[一二三四五六七八九十百千零〇两0-9０-９]+"
_CHAPTER = re.compile(rf"^(第{_CN_NUMBER}(编|篇|部分|章|节|条|款))([ \t\u3000]*)(.*)$")
_CHAPTER_LEVEL = {"编": 0, "篇": 0, "部分": 0, "章": 1, "节": 2, "条": 3, "款": 4}
_LEADERS = re.compile(r"(\.{4,}|…{2,}|·{4,}|_{4,})\s*\d*\s*$")
_SENTENCE_END = re.compile(r"[。！？；!?;，,：:]$")
_INNER_PUNCT = re.compile(r"[。；，]")
_WORD = re.compile(r"[A-Za-z0-9]+")
_TABLE_ROW = re.compile(r"^\s*\|")
_MAX_TITLE_UNITS = 40


@dataclass(frozen=True)
class Block:
    """A span of the text: kind is heading, text, table or code; `path` is its heading path."""

    kind: str
    start: int
    end: int
    path: tuple[str, ...]
    section: int


def _short(title: str) -> bool:
    units = len(CJK.findall(title)) + 2 * len(_WORD.findall(title))
    # A title starting in lower case is a wrapped sentence ("2.5 million users ..."), not a clause.
    lower = title[:1].isascii() and title[:1].islower()
    return 0 < units <= _MAX_TITLE_UNITS and not _SENTENCE_END.search(title) and not lower


def heading_of(line: str, *, markdown: bool) -> tuple[int, str] | None:
    """Return (level, title) if `line` is a heading, else None. Lower levels are outer."""
    if found := _ATX.match(line):
        return len(found.group(1)), found.group(2).strip()
    if markdown:
        return None
    stripped = line.strip()
    if not stripped or len(stripped) > 120 or _LEADERS.search(stripped) or _TABLE_ROW.match(line):
        return None
    if found := _CHAPTER.match(stripped):
        label, spaced, rest = found.group(1), bool(found.group(3)), found.group(4).strip()
        level = _CHAPTER_LEVEL[found.group(2)]
        if not rest:
            return level, label
        if _short(rest) and not _INNER_PUNCT.search(rest):
            return level, f"{label} {rest}"
        # "第三条 为了……" is an article with its text; "第5条规定，……" is a wrapped sentence.
        return (level, label) if spaced else None
    if found := _APPENDIX.match(stripped):
        label, rest = re.sub(r"\s+", "", found.group(1)), found.group(2).strip()
        return 1, f"{label} {rest}".strip() if not rest or _short(rest) else label
    for pattern in (_VERSIONED, _MULTI):
        if found := pattern.match(stripped):
            number, spaced, rest = found.group(1), bool(found.group(2)), found.group(3).strip()
            level = number.count(".") + 1
            if _MEASURE.match(rest):
                return None
            if _short(rest) and not _INNER_PUNCT.search(rest):
                return level, f"{number} {rest}"
            # A long numbered line is a clause with its text on the same line: the number is
            # the heading, the line stays content.
            return (level, number) if pattern is _MULTI and level >= 3 and spaced else None
    if (found := _SINGLE.match(stripped)) and _short(found.group(2)):
        return 1, f"{found.group(1)} {found.group(2).strip()}"
    return None


def split_blocks(text: str, *, markdown: bool) -> list[Block]:
    """Cut `text` into blocks in order, each with the heading path of its section."""
    return _Splitter(text, markdown=markdown).run()


class _Splitter:
    """One pass over the lines, keeping the heading stack and the block being built."""

    def __init__(self, text: str, *, markdown: bool) -> None:
        self.lines = text.split("\n")
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line) + 1)
        self.markdown = markdown
        self.blocks: list[Block] = []
        self.stack: list[tuple[int, str]] = []
        self.section = 0
        self.kind = ""  # the open block's kind, "" when none is open
        self.start = 0  # the open block's first line

    def run(self) -> list[Block]:
        lines = self.lines
        index = self._front_matter()
        while index < len(lines):
            line = lines[index]
            if fence := _FENCE.match(line):
                index = self._code(index, fence.group(1))
                continue
            heading = heading_of(line, markdown=self.markdown)
            if heading is not None:
                self._heading(index, index + 1, heading)
            elif self._is_setext(index):
                start = self.start
                self.kind = ""  # the open one-line paragraph is the heading's title
                level = 1 if line.strip().startswith("=") else 2
                self._heading(start, index + 1, (level, lines[start].strip()))
            elif not line.strip():
                self._close(index)
            else:
                kind = "table" if _TABLE_ROW.match(line) else "text"
                if self.kind != kind:
                    self._close(index)
                    self.kind, self.start = kind, index
            index += 1
        self._close(len(lines))
        return self.blocks

    def _front_matter(self) -> int:
        # YAML front matter is metadata; keep it as one block so `---` is not read as a heading.
        if not (self.markdown and self.lines and self.lines[0].strip() == "---"):
            return 0
        for end in range(1, len(self.lines)):
            if self.lines[end].strip() in ("---", "..."):
                self.kind, self.start = "code", 0
                self._close(end + 1)
                return end + 1
        return 0

    def _code(self, index: int, fence: str) -> int:
        self._close(index)
        end = next(
            (
                j
                for j in range(index + 1, len(self.lines))
                if self.lines[j].lstrip().startswith(fence)
            ),
            len(self.lines) - 1,
        )
        self.kind, self.start = "code", index
        self._close(end + 1)
        return end + 1

    def _is_setext(self, index: int) -> bool:
        return (
            self.markdown
            and self.kind == "text"
            and self.start == index - 1
            and _SETEXT.match(self.lines[index]) is not None
        )

    def _heading(self, first: int, stop: int, heading: tuple[int, str]) -> None:
        self._close(first)
        _push(self.stack, heading)
        self.section += 1
        path = tuple(title for _, title in self.stack)
        end = self.offsets[stop] - 1
        self.blocks.append(Block("heading", self.offsets[first], end, path, self.section))

    def _close(self, stop: int) -> None:
        if self.kind:
            path = tuple(title for _, title in self.stack)
            end = self.offsets[stop] - 1
            self.blocks.append(Block(self.kind, self.offsets[self.start], end, path, self.section))
        self.kind = ""


def _push(stack: list[tuple[int, str]], heading: tuple[int, str]) -> None:
    level = heading[0]
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append(heading)
