"""Parse HTML into Markdown-like text: headings as `#` lines, tables as Markdown, no chrome."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, NavigableString, Tag

from core.errors import ParseError
from core.ingest.plain import read_text
from core.ingest.tables import markdown_table
from core.models import Page, ParsedDocument

__all__ = ["html_to_text", "parse_html"]

_DROP = (
    "script",
    "style",
    "nav",
    "noscript",
    "template",
    "svg",
    "iframe",
    "head",
    "form",
    "button",
)
_BLOCKS = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
    "figure", "figcaption", "dl", "dt", "dd", "address", "details", "summary", "body", "html",
}  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0]+")


def parse_html(path: Path, source: str) -> ParsedDocument:
    """Parse an HTML file into one page of Markdown-like text."""
    markup = read_text(path, source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        soup = BeautifulSoup(markup, "html.parser")
    page_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    text = html_to_text(soup)
    if not text.strip():
        raise ParseError(f"{source} has no readable text (only markup, scripts or styles).")
    first_heading = next(
        (ln.lstrip("#").strip() for ln in text.split("\n") if ln.startswith("#")), ""
    )
    title = page_title or first_heading or path.stem
    return ParsedDocument(source, "html", title, (Page(1, text),))


def html_to_text(soup: BeautifulSoup | Tag) -> str:
    """Render parsed HTML as text with Markdown headings, lists and tables."""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    blocks: list[str] = []
    _walk(soup, blocks, [])
    text = "\n\n".join(b for b in blocks if b.strip())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _walk(node: Tag, blocks: list[str], inline: list[str]) -> None:
    """Collect block texts in document order; `inline` gathers the running paragraph."""
    for child in node.children:
        if isinstance(child, NavigableString):
            if type(child) is NavigableString:  # skip comments, CDATA, doctype
                inline.append(str(child))
            continue
        if not isinstance(child, Tag):
            continue
        name = child.name.lower()
        if name == "br":
            inline.append("\n")
        elif name in _HEADINGS:
            _flush(blocks, inline)
            blocks.append("#" * _HEADINGS[name] + " " + _inline_text(child))
        elif name == "table":
            _flush(blocks, inline)
            blocks.append(_table(child))
        elif name == "pre":
            _flush(blocks, inline)
            blocks.append("```\n" + child.get_text().strip("\n") + "\n```")
        elif name in ("ul", "ol"):
            _flush(blocks, inline)
            blocks.append(_list(child, ordered=name == "ol"))
        elif name in _BLOCKS or name == "li":
            _flush(blocks, inline)
            _walk(child, blocks, inline)
            _flush(blocks, inline)
        else:
            _walk(child, blocks, inline)


def _flush(blocks: list[str], inline: list[str]) -> None:
    if inline:
        lines = [_SPACE.sub(" ", part).strip() for part in "".join(inline).split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            blocks.append(text)
        inline.clear()


def _inline_text(tag: Tag) -> str:
    return _SPACE.sub(" ", tag.get_text(" ")).strip()


def _list(tag: Tag, *, ordered: bool) -> str:
    items = tag.find_all("li", recursive=False)
    return "\n".join(
        f"{index}. {_inline_text(li)}" if ordered else f"- {_inline_text(li)}"
        for index, li in enumerate(items, start=1)
    )


def _table(tag: Tag) -> str:
    rows = []
    for row in tag.find_all("tr"):
        if row.find_parent("table") is not tag:
            continue  # a nested table's rows belong to its own cell text
        cells = row.find_all(("td", "th"), recursive=False)
        rows.append([_inline_text(cell) for cell in cells])
    rows = [row for row in rows if any(row)]
    return markdown_table(rows) if rows else ""
