"""Parse Word (.docx) files: paragraphs, heading styles as `#` lines, tables as Markdown."""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from pathlib import Path

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph

from ..errors import ParseError
from ..models import Page, ParsedDocument
from .tables import markdown_table

__all__ = ["parse_docx"]

# Built-in heading styles keep their English names in styles.xml even in a Chinese Word, but
# documents converted by other tools carry localized names.
_HEADING_STYLE = re.compile(r"^(heading|标题|標題|titre|überschrift)\s*(\d)$", re.I)
# A .docx is a zip: one that unpacks to more than this is refused as a zip bomb. Text, styles
# and embedded images fit far below it (uploads are capped at 200 MB packed). Read at call time.
MAX_UNPACKED_BYTES = 256 * 2**20


def parse_docx(path: Path, source: str, *, max_bytes: int | None = None) -> ParsedDocument:
    """Parse a .docx file into one page of Markdown-like text, in document order.

    `max_bytes` caps what the archive may unpack to (default MAX_UNPACKED_BYTES).
    """
    limit = MAX_UNPACKED_BYTES if max_bytes is None else max_bytes
    try:
        package = _unpack(path, source, limit)
    except OSError as exc:
        raise ParseError(f"{source} could not be read ({exc.strerror or exc}).") from None
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        ValueError,
        RuntimeError,
        NotImplementedError,
    ):
        # RuntimeError: an encrypted member; NotImplementedError: an unknown compression.
        raise ParseError(
            f"{source} is not a valid Word document (.docx); it may be damaged."
        ) from None
    try:
        document = docx.Document(package)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError):
        raise ParseError(
            f"{source} is not a valid Word document (.docx); it may be damaged."
        ) from None
    except Exception as exc:  # lxml raises its own errors for broken XML parts
        raise ParseError(
            f"{source} could not be parsed as a Word document ({type(exc).__name__})."
        ) from None
    blocks: list[str] = []
    first_heading = ""
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = _rows(item)
            if rows:
                blocks.append(markdown_table(rows))
            continue
        text = _paragraph(item)
        if text:
            blocks.append(text)
            if not first_heading and text.startswith("#"):
                first_heading = text.lstrip("#").strip()
    text = "\n\n".join(blocks)
    if not text.strip():
        raise ParseError(f"{source} contains no text.")
    title = (document.core_properties.title or "").strip() or first_heading or path.stem
    return ParsedDocument(source, "docx", title, (Page(1, text),))


def _unpack(path: Path, source: str, limit: int) -> io.BytesIO:
    """The package re-written uncompressed in memory, reading at most `limit` bytes out of it;
    python-docx then never inflates the file's own streams."""
    with zipfile.ZipFile(path) as archive:
        # The last of duplicate names, as zipfile (and so python-docx) would read.
        members = {info.filename: info for info in archive.infolist() if not info.is_dir()}
        if sum(info.file_size for info in members.values()) > limit:
            raise _too_big(source, limit)  # refused from the declared sizes, before any read
        left = limit
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
            for info in members.values():
                with archive.open(info) as member:
                    data = member.read(left + 1)  # the declared sizes may lie: bound the read
                left -= len(data)
                if left < 0:
                    raise _too_big(source, limit)
                copy.writestr(info.filename, data)
    out.seek(0)
    return out


def _too_big(source: str, limit: int) -> ParseError:
    return ParseError(
        f"{source} unpacks to more than {limit / 2**20:g} MB, which looks like a zip bomb;"
        " re-save it from Word or split it into smaller documents."
    )


def _paragraph(paragraph: Paragraph) -> str:
    text = paragraph.text.replace("\r", "").strip()
    if not text:
        return ""
    level = _heading_level(paragraph)
    if level:
        return "#" * level + " " + " ".join(text.split())
    style = (paragraph.style.name if paragraph.style is not None else "").lower()
    if style.startswith("list"):
        return ("1. " if "number" in style else "- ") + text
    return text


def _heading_level(paragraph: Paragraph) -> int:
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    if name.lower() == "title":
        return 1
    if found := _HEADING_STYLE.match(name.strip()):
        return min(int(found.group(2)), 6)
    # A paragraph can be a heading by outline level alone (w:outlineLvl, 0-based).
    ppr = paragraph._p.pPr
    level = ppr.find(qn("w:outlineLvl")) if ppr is not None else None
    if level is not None:
        value = level.get(qn("w:val"))
        if value is not None and value.isdigit() and int(value) < 6:
            return int(value) + 1
    return 0


def _rows(table: Table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells = []
        previous = None
        for cell in row.cells:
            # python-docx repeats a horizontally merged cell once per grid column.
            cells.append("" if cell._tc is previous else cell.text)
            previous = cell._tc
        rows.append(cells)
    return [row for row in rows if any(c.strip() for c in row)]
