"""Read a chunk's text as the offline heuristics need it: segments with their 1-based lines.

A segment is a Markdown heading, a sentence of prose, a table row or a fenced code block. Inline
Markdown (links, emphasis, inline code, HTML tags, list markers) is cleaned out of its text so that
the term and pattern rules see prose; the line range still points at the raw lines of the chunk,
counted over `text.splitlines()`, the numbering the LLM role sees.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..text.language import is_chinese_prose

__all__ = [
    "Requirement",
    "Segment",
    "clean_inline",
    "is_chinese_segments",
    "requirement_of",
    "segment_text",
]

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_TABLE_LINE = re.compile(r"^\s*\|.*\|")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|[a-z][.)])\s+")
_QUOTE = re.compile(r"^\s*>\s?")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_URL = re.compile(r"<?https?://[^\s<>)\]]+>?")
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_EMPHASIS = re.compile(r"\*\*|__|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")
_SPACES = re.compile(r"[ \t\u3000]+")
# A sentence ends at CJK terminators wherever they are, and at Latin ones before a space.
_END = re.compile(r"[。！？；]+[”’」』）)\]\"']*|[.!?]+[”’\"')\]]*(?=\s|$)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "al", "mr", "dr", "no", "fig"})
_CLAUSE_ID = re.compile(r"^V?\d{1,2}(?:\.\d{1,3}){1,3}$")
_LEVEL = re.compile(r"^L([1-3])$")
_CHECK = re.compile(r"[✓✔√xX✅●■]")


@dataclass(frozen=True, slots=True)
class Segment:
    """One heading, sentence, table row or code block of a chunk, with its 1-based lines."""

    kind: str  # heading | sentence | row | code
    text: str  # cleaned prose (a row: its cells joined by " | "; code: the raw block)
    line_start: int
    line_end: int
    level: int = 0  # heading level (1 for "#")
    cells: tuple[str, ...] = ()  # a row's cleaned cells
    header: tuple[str, ...] = ()  # the header cells of the row's table
    code_terms: tuple[str, ...] = ()  # contents of inline `code` spans


@dataclass(frozen=True, slots=True)
class Requirement:
    """A row of a requirement table such as ASVS's: `| 5.3.1 | 验证… | ✓ | ✓ | ✓ | 116 |`."""

    clause: str
    description: str
    level: str = ""  # the lowest level that checks it, e.g. "L1"
    cwe: str = ""


def segment_text(text: str) -> list[Segment]:
    """Cut a chunk's text into headings, sentences, table rows and code blocks, in order."""
    lines = text.splitlines()
    out: list[Segment] = []
    paragraph: list[int] = []  # 0-based indexes of the lines of the current paragraph
    header: tuple[str, ...] = ()
    fence_start = -1
    in_quote = False
    for i, line in enumerate(lines):
        if fence_start >= 0:
            if _FENCE.match(line):
                out.append(_code(lines, fence_start, i))
                fence_start = -1
            continue
        if _FENCE.match(line):
            _flush(lines, paragraph, out)
            fence_start = i
            continue
        if _TABLE_LINE.match(line):
            _flush(lines, paragraph, out)
            if i == 0 or not _TABLE_LINE.match(lines[i - 1]):
                header = ()  # a new table
            if _SEPARATOR.match(line):
                continue
            cells = _cells(line)
            if i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
                header = cells
                continue
            joined = " | ".join(c for c in cells if c)
            out.append(Segment("row", joined, i + 1, i + 1, cells=cells, header=header))
            continue
        if found := _HEADING.match(line):
            _flush(lines, paragraph, out)
            title, _ = _clean(found.group(2))
            if title:
                out.append(Segment("heading", title, i + 1, i + 1, len(found.group(1))))
            continue
        if not line.strip():
            _flush(lines, paragraph, out)
            continue
        quoted = bool(_QUOTE.match(line))
        if _LIST_ITEM.match(line) or (paragraph and quoted != in_quote):
            _flush(lines, paragraph, out)  # a list item, or a quote's edge, starts a paragraph
        in_quote = quoted
        paragraph.append(i)
    if fence_start >= 0:  # a code block the chunk cut before its closing fence
        out.append(_code(lines, fence_start, len(lines)))
    _flush(lines, paragraph, out)
    return out


def is_chinese_segments(segments: Sequence[Segment], context: str = "") -> bool:
    """Whether the segments' prose is mostly Chinese (text/language.py `is_chinese_prose`); a
    code segment is not counted, but its Chinese makes a Chinese document's chunk Chinese."""
    return is_chinese_prose(
        (s.text for s in segments if s.kind != "code"),
        context,
        any_of=(s.text for s in segments if s.kind == "code"),
    )


def requirement_of(segment: Segment) -> Requirement | None:
    """Read a table row as a numbered requirement, or None when it is not one."""
    cells = segment.cells
    if segment.kind != "row" or not cells or not _CLAUSE_ID.match(cells[0]):
        return None
    description = max(cells[1:], key=len, default="")
    if len(description) < 8:
        return None
    level = cwe = ""
    for name, value in zip(segment.header, cells, strict=False):
        found = _LEVEL.match(name.strip())
        if found and not level and _CHECK.search(value):
            level = f"L{found.group(1)}"
        elif name.strip().upper() == "CWE" and value.strip().isdigit():
            cwe = value.strip()
    return Requirement(cells[0], description, level, cwe)


def clean_inline(text: str) -> str:
    """Strip inline Markdown from a line (a heading of the chunker's heading path, say)."""
    return _clean(text)[0]


def _code(lines: Sequence[str], start: int, end: int) -> Segment:
    """A fenced block from its opening fence (0-based `start`) to its closing one (`end`)."""
    last = min(end, len(lines) - 1)
    body = "\n".join(lines[start + 1 : end])
    return Segment("code", body, start + 1, last + 1)


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(_clean(cell)[0] for cell in _CELL_SPLIT.split(inner))


def _flush(lines: Sequence[str], paragraph: list[int], out: list[Segment]) -> None:
    """Split the collected paragraph into sentences, each mapped back to its raw lines."""
    if not paragraph:
        return
    parts: list[str] = []
    owners: list[int] = []  # for each character of the joined clean text, its 0-based line
    terms: list[str] = []
    for index in paragraph:
        line = _QUOTE.sub("", lines[index], count=1)
        clean, spans = _clean(_LIST_ITEM.sub("", line, count=1))
        terms.extend(spans)
        if parts:
            parts.append(" ")
            owners.append(index)
        parts.append(clean)
        owners.extend([index] * len(clean))
    joined = "".join(parts)
    paragraph.clear()
    for start, end in _sentences(joined):
        piece = joined[start:end]
        sentence = piece.strip()
        if not sentence:
            continue
        first = owners[start + len(piece) - len(piece.lstrip())]
        last = owners[end - 1 - (len(piece) - len(piece.rstrip()))]
        mine = tuple(t for t in terms if t in sentence)
        out.append(Segment("sentence", sentence, first + 1, last + 1, code_terms=mine))


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    begin = 0
    for found in _END.finditer(text):
        if found.group().startswith(".") and len(found.group()) == 1:
            before = text[max(0, found.start() - 4) : found.start()].split(" ")[-1].casefold()
            if before in _ABBREVIATIONS or len(before) == 1:
                continue
        if text[begin : found.end()].strip():
            spans.append((begin, found.end()))
            begin = found.end()
    if text[begin:].strip():
        spans.append((begin, len(text)))
    return spans


def _clean(raw: str) -> tuple[str, list[str]]:
    """Strip inline Markdown and HTML from one line; return it and its inline code spans.

    Code spans are kept verbatim (`<script>` inside one is content, not a tag to remove).
    """
    out: list[str] = []
    terms: list[str] = []
    last = 0
    for found in _CODE_SPAN.finditer(raw):
        out.append(_clean_prose(raw[last : found.start()]))
        code = found.group(1).strip()
        terms.append(code)
        out.append(code)
        last = found.end()
    out.append(_clean_prose(raw[last:]))
    return _SPACES.sub(" ", "".join(out)).strip(), terms


def _clean_prose(text: str) -> str:
    text = _IMAGE.sub("", text)
    text = _LINK.sub(lambda m: m.group(1) or m.group(2) or "", text)
    text = _URL.sub("", text)
    text = _TAG.sub("", text)
    text = _EMPHASIS.sub("", text)
    return _ESCAPE.sub(r"\1", text)
