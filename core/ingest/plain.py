"""Parse plain text and Markdown files: decode robustly, keep the text, find a title.

HTML embedded in them (a Word table converted to Markdown stays `<table>`) is rendered as text
by embedded_html.py, so that tags never reach the index.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import ParseError
from ..models import Page, ParsedDocument
from .detect import read_failure
from .embedded_html import expand_html
from .textcodec import decode_text, normalize_newlines

__all__ = ["parse_markdown", "parse_text", "read_text"]

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n(---|\.\.\.)\n", re.S)
_FRONT_TITLE = re.compile(r"^title:\s*['\"]?(.+?)['\"]?\s*$", re.M)
_ATX = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def read_text(path: Path, source: str) -> str:
    """Read and decode a text file; raise ParseError if it cannot be read or decoded."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise read_failure(path, exc) from None
    text = decode_text(data)
    if text is None:
        raise ParseError(f"{source} is not valid text in any known encoding (UTF-8, GBK, Big5, …).")
    text = normalize_newlines(text)
    if not text.strip():
        raise ParseError(f"{source} is empty.")
    return text


def parse_text(path: Path, source: str) -> ParsedDocument:
    """Parse a plain-text file into one page."""
    text = _rendered(read_text(path, source), source, markdown=False)
    return ParsedDocument(source, "text", _first_line_title(text) or path.stem, (Page(1, text),))


def parse_markdown(path: Path, source: str) -> ParsedDocument:
    """Parse a Markdown file into one page; the title is front matter's, the first heading, …"""
    text = _rendered(read_text(path, source), source, markdown=True)
    title = _markdown_title(text) or _first_line_title(text) or path.stem
    return ParsedDocument(source, "markdown", title, (Page(1, text),))


def _rendered(text: str, source: str, *, markdown: bool) -> str:
    text = expand_html(text, markdown=markdown)
    if not text.strip():
        raise ParseError(f"{source} has no readable text (only markup or comments).")
    return text


def _markdown_title(text: str) -> str | None:
    front = _FRONT_MATTER.match(text)
    if front and (found := _FRONT_TITLE.search(front.group(1))):
        return found.group(1).strip()
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (heading := _ATX.match(line)):
            return heading.group(1).strip()
    return None


def _first_line_title(text: str) -> str | None:
    for line in text.split("\n")[:20]:
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= 100 else None
    return None
