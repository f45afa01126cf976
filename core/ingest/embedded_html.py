"""HTML as text: the one BeautifulSoup adapter, for HTML pages and for HTML inside text files.

`render_page` turns an HTML page into Markdown-like text: headings as `#` lines, lists as `-`
items, tables as Markdown tables (merged cells carried down and across, tables.py), chrome
dropped. `expand_html` finds the HTML that Markdown and plain-text files embed (Word documents
converted to Markdown keep their tables as `<table>`) and renders each block the same way, so
that no tag reaches the index. It is conservative: a block starts only at a line that opens a
known block-level tag, code (fenced, indented or `inline`) is left as it is, and a `<` that
opens no known tag (`a < b`, `List<String>`) stays text.
"""

from __future__ import annotations

import html
import re
import warnings

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, Tag
from bs4.element import NavigableString, PageElement

from .tables import Cell, spanned_table

__all__ = ["expand_html", "render_page"]

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
    "center",
}  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# Elements whose edges separate words even when the markup has no space there.
_BREAKS = _BLOCKS | set(_HEADINGS) | {"br", "li", "ul", "ol", "tr", "td", "th", "table", "hr"}
_TABLE_PARTS = ("table", "caption", "thead", "tbody", "tfoot", "tr", "td", "th")
# CommonMark's block-level tags (HTML block kinds 1 and 6), the ones a line may open.
_BLOCK_TAGS = _BREAKS | set(_DROP) | set(_TABLE_PARTS) | {
    "colgroup", "col", "pre", "title", "menu", "dialog", "fieldset", "legend", "textarea",
}  # fmt: skip
_INLINE_TAGS = {
    "a", "abbr", "b", "big", "cite", "code", "del", "em", "font", "i", "img", "ins", "kbd",
    "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "tt", "u",
    "var", "wbr",
}  # fmt: skip
_KNOWN = "|".join(sorted(_BLOCK_TAGS | _INLINE_TAGS, key=len, reverse=True))
_TABLE_TAG = re.compile(r"<(/?)(table|thead|tbody|tfoot|tr|td|th)(?=[\s/>])[^>]*>", re.I)
_TABLE_LEVEL = {"thead": 0, "tbody": 0, "tfoot": 0, "tr": 1, "td": 2, "th": 2}
_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0]+")
_STRAY_LT = re.compile(rf"<(?!/?(?:{_KNOWN})(?=[\s/>])|!)", re.I)
_BLOCK_START = re.compile(r"^ {0,3}<(?:(!--)|(!doctype\b)|/?([a-z][a-z0-9]*)(?=[\s/>]|$))", re.I)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_INLINE_TAG = re.compile(rf"</?(?:{'|'.join(sorted(_INLINE_TAGS))})(?:\s[^<>]*)?/?>", re.I)
# A tag with an event handler or a `javascript:` URL is what the document is about (an XSS
# payload in a security standard), not formatting: it stays as text.
_ACTIVE = re.compile(r"\son[a-z]+\s*=|javascript:", re.I)
_BR = re.compile(r"<br\s*/?>", re.I)
_COMMENT = re.compile(r"<!--.*?-->")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def render_page(markup: str) -> tuple[str, str]:
    """Return an HTML page's title (empty if none) and its text."""
    soup = _soup(markup)
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    return title, _to_text(soup)


def expand_html(text: str, *, markdown: bool) -> str:
    """Replace the HTML blocks in a text file by their text; leave code and the rest alone.

    Markdown files also lose inline tags (`<b>`, `<br>`, `<sup>`), comments and character
    references outside code, as a Markdown renderer would show them. Plain-text files have only
    their embedded tables rendered: other markup in a text file is more likely its subject.
    """
    if "<" not in text and not (markdown and "&" in text):
        return text
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if fence := _FENCE.match(line):
            end = _fence_end(lines, index, fence.group(1))
            out.extend(lines[index:end])
            index = end
        elif (end := _block_end(lines, index, markdown=markdown)) > index:
            _emit_block(out, _fragment_text("\n".join(lines[index:end])), lines, end)
            index = end
        else:
            out.append(_inline(line) if markdown else line)
            index += 1
    return "\n".join(out)


# --- finding the blocks ----------------------------------------------------------------------


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """The index after a fenced code block; an unclosed fence runs to the end, as in Markdown."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    for index in range(start + 1, len(lines)):
        if closing.match(lines[index]):
            return index + 1
    return len(lines)


def _block_end(lines: list[str], start: int, *, markdown: bool) -> int:
    """The index after the HTML block that starts at `start`, or `start` when none does.

    A block runs until its first tag closes, or else to a blank line that no more markup
    follows: blank lines inside a converted table do not end it, and an unclosed one stops
    before the prose after it.
    """
    found = _BLOCK_START.match(lines[start])
    if not found or (not markdown and not found.group(3)):
        return start
    if found.group(1):  # a comment: to its end, or not a comment at all
        return next((i + 1 for i in range(start, len(lines)) if "-->" in lines[i]), start)
    if found.group(2):  # a doctype: no text of its own
        return start + 1
    name = found.group(3).lower()
    if name not in (_BLOCK_TAGS if markdown else _TABLE_PARTS):
        return start
    opened, closed = re.compile(rf"<{name}(?=[\s/>])", re.I), re.compile(rf"</{name}\s*>", re.I)
    depth = 0
    for index in range(start, len(lines)):
        line = lines[index]
        if index > start and _FENCE.match(line):
            return index
        depth += len(opened.findall(line)) - len(closed.findall(line))
        if depth <= 0 and closed.search(line):
            return index + 1
        if not line.strip() and not _markup_follows(lines, index):
            return index
    return len(lines)


def _markup_follows(lines: list[str], blank: int) -> bool:
    following = next((line for line in lines[blank + 1 :] if line.strip()), "")
    return following.lstrip().startswith("<")


def _emit_block(out: list[str], rendered: str, lines: list[str], end: int) -> None:
    """Append a rendered block, set apart by blank lines as the HTML block was."""
    if out and out[-1].strip():
        out.append("")
    if rendered:
        out.extend(rendered.split("\n"))
        if end < len(lines) and lines[end].strip():
            out.append("")


def _inline(line: str) -> str:
    """Drop known inline tags, comments and character references, outside code spans."""
    if line.startswith(("    ", "\t")):
        return line  # indented code, or a continuation that may be code: leave it
    separator = " " if line.lstrip().startswith("|") else "\n"  # a table row stays one line
    parts, last = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_untag(line[last : span.start()], separator), span.group()]
        last = span.end()
    parts.append(_untag(line[last:], separator))
    return "".join(parts)


def _untag(text: str, separator: str) -> str:
    text = _COMMENT.sub("", text)
    text = _BR.sub(separator, text)
    text = _INLINE_TAG.sub(lambda tag: tag.group() if _ACTIVE.search(tag.group()) else "", text)
    return _ENTITY.sub(lambda found: html.unescape(found.group()), text)


def _fragment_text(markup: str) -> str:
    """Render a block of HTML cut from a text file; a `<` that opens no known tag is text."""
    markup = _STRAY_LT.sub("&lt;", markup)
    first = re.match(r"\s*<([a-z0-9]+)", markup, re.I)
    if first and first.group(1).lower() in _TABLE_PARTS and first.group(1).lower() != "table":
        markup = f"<table>{markup}</table>"  # rows cut from their table are still a table
    return _to_text(_soup(markup))


# --- rendering -------------------------------------------------------------------------------


def _soup(markup: str) -> BeautifulSoup:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        return BeautifulSoup(_close_omitted(markup), "html.parser")


def _close_omitted(markup: str) -> str:
    """Write the end tags a table may leave out (`<tr><td>a<td>b`), where a browser infers
    them: Python's parser would nest each next cell and row in the open one instead."""
    out: list[str] = []
    tables: list[list[str]] = []  # per open table: its open section, row and cell, outermost first
    last = 0
    for found in _TABLE_TAG.finditer(markup):
        ending, name = found.group(1) == "/", found.group(2).lower()
        closed: list[str] = []
        if name == "table" and not ending:
            tables.append([])
        elif name == "table":
            closed = tables.pop() if tables else []
        elif tables:
            closed = _left_open(tables[-1], name, ending=ending)
        out += [markup[last : found.start()], *(f"</{o}>" for o in reversed(closed)), found.group()]
        last = found.end()
    out.append(markup[last:])
    return "".join(out)


def _left_open(open_: list[str], name: str, *, ending: bool) -> list[str]:
    """Update a table's open elements for a tag; return those the tag implicitly closes."""
    if ending:  # an end tag closes what is open inside its element; a stray one closes nothing
        if name not in open_:
            return []
        at = len(open_) - 1 - open_[::-1].index(name)
        closed = open_[at + 1 :]
    else:  # a start tag closes what is open at its own level or below it
        level = _TABLE_LEVEL[name]
        at = next((i for i, o in enumerate(open_) if _TABLE_LEVEL[o] >= level), len(open_))
        closed = open_[at:]
    del open_[at:]
    if not ending:
        open_.append(name)
    return closed


def _to_text(soup: BeautifulSoup) -> str:
    for tag in soup.find_all(_DROP):
        tag.decompose()
    blocks = _blocks(soup)
    text = "\n\n".join(b for b in blocks if b.strip())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _blocks(root: Tag) -> list[str]:
    """The block texts in document order. The walk keeps its own stack: Python's parser nests
    each unclosed `<p>` in the one before, deeper than recursion may go."""
    blocks: list[str] = []
    inline: list[str] = []  # the running paragraph
    levels = [(iter(root.children), False)]  # each: the children left, whether it is a block
    while levels:
        child = next(levels[-1][0], None)
        if child is None:
            if levels.pop()[1]:
                _flush(blocks, inline)
        elif isinstance(child, NavigableString):
            if type(child) is NavigableString:  # skip comments, CDATA, doctype
                inline.append(str(child))
        elif isinstance(child, Tag):
            rendered = _rendered(child)
            if rendered is not None:
                _flush(blocks, inline)
                blocks.append(rendered)
            elif child.name.lower() == "br":
                inline.append("\n")
            else:
                block = child.name.lower() in _BLOCKS or child.name.lower() == "li"
                if block:
                    _flush(blocks, inline)
                levels.append((iter(child.children), block))
    _flush(blocks, inline)
    return blocks


def _rendered(tag: Tag) -> str | None:
    """The text of an element rendered whole (heading, table, code, list), else None."""
    name = tag.name.lower()
    if name in _HEADINGS:
        return "#" * _HEADINGS[name] + " " + _text_of(tag)
    if name == "table":
        return _table(tag)
    if name == "pre":
        return "```\n" + tag.get_text().strip("\n") + "\n```"
    if name in ("ul", "ol"):
        return _list(tag, ordered=name == "ol")
    return None


def _flush(blocks: list[str], inline: list[str]) -> None:
    if inline:
        lines = [_SPACE.sub(" ", part).strip() for part in "".join(inline).split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            blocks.append(text)
        inline.clear()


def _text_of(tag: Tag) -> str:
    """An element's text on one line: inline tags vanish, breaks and blocks become spaces."""
    parts: list[str] = []
    for piece in tag.descendants:
        if _is_break(piece) or _is_break(piece.previous_sibling):
            parts.append(" ")  # where a block starts, and where one has just ended
        if type(piece) is NavigableString:
            parts.append(str(piece))
    return _SPACE.sub(" ", "".join(parts)).strip()


def _is_break(piece: object) -> bool:
    return isinstance(piece, Tag) and piece.name.lower() in _BREAKS


def _list(tag: Tag, *, ordered: bool) -> str:
    items = tag.find_all("li", recursive=False)
    return "\n".join(
        f"{index}. {_text_of(li)}" if ordered else f"- {_text_of(li)}"
        for index, li in enumerate(items, start=1)
    )


def _table(tag: Tag) -> str:
    """A table as Markdown, with its caption before it and any text outside its cells after."""
    rows = [
        [_cell(cell) for cell in row.find_all(("td", "th"), recursive=False)]
        for row in tag.find_all("tr")
        if _nearest(row, {"table"}) is tag  # a nested table's rows belong to its cell's text
    ]
    caption = tag.find("caption")
    stray = " ".join(
        text
        for piece in tag.descendants
        if type(piece) is NavigableString
        and (text := piece.strip())
        and _nearest(piece, {"td", "th", "caption"}, stop=tag) is None
    )
    parts = (_text_of(caption) if caption else "", spanned_table(rows), stray)
    return "\n\n".join(part for part in parts if part)


def _cell(cell: Tag) -> Cell:
    group = _nearest(cell, {"thead", "tbody", "tfoot", "table"})
    header = cell.name == "th" or (group is not None and group.name == "thead")
    return Cell(_text_of(cell), _span(cell, "rowspan"), _span(cell, "colspan"), header)


def _nearest(node: PageElement, names: set[str], stop: Tag | None = None) -> Tag | None:
    """The closest ancestor named in `names`, below `stop` (bs4's find_parent, without its
    general matching: this runs once per cell and per string)."""
    parent = node.parent
    while parent is not None and parent is not stop:
        if parent.name in names:
            return parent
        parent = parent.parent
    return None


def _span(cell: Tag, attribute: str) -> int:
    value = cell.get(attribute)
    found = re.match(r"\s*(\d+)", value if isinstance(value, str) else "")
    if not found:
        return 1
    # rowspan="0" stretches to the end of the table; colspan="0" means 1.
    return int(found.group(1)) or (1 << 16 if attribute == "rowspan" else 1)
