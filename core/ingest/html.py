"""Parse HTML files into Markdown-like text: headings as `#` lines, tables as Markdown, no chrome.

The rendering itself is embedded_html.py's, shared with the HTML that Markdown and plain-text
files embed; this module reads the file and picks the title.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ParseError
from ..models import Page, ParsedDocument
from .embedded_html import render_page
from .plain import read_text

__all__ = ["parse_html"]


def parse_html(path: Path, source: str) -> ParsedDocument:
    """Parse an HTML file into one page of Markdown-like text."""
    page_title, text = render_page(read_text(path, source))
    if not text.strip():
        raise ParseError(f"{source} has no readable text (only markup, scripts or styles).")
    first_heading = next(
        (ln.lstrip("#").strip() for ln in text.split("\n") if ln.startswith("#")), ""
    )
    title = page_title or first_heading or path.stem
    return ParsedDocument(source, "html", title, (Page(1, text),))
