"""Tell what kind of document a file is: by its content first, its extension second."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import BinaryIO

from ..errors import ParseError
from .file_names import sanitize_name
from .textcodec import decode_text, looks_binary

__all__ = ["KINDS", "SUPPORTED", "detect_kind", "mislabelled", "read_failure"]

KINDS = ("pdf", "docx", "html", "markdown", "text", "jsonl")
SUPPORTED = "PDF, DOCX, Markdown, text, HTML, JSONL"

_HEAD = 64 * 1024
_MARKDOWN_EXT = {".md", ".markdown", ".mdown", ".mkd", ".mdx"}
_HTML_EXT = {".html", ".htm", ".xhtml"}
_JSONL_EXT = {".jsonl", ".ndjson"}
_PLAIN_EXT = {".txt", ".text", ".log", ".csv", ".tsv"}
_TEXT_EXT = _MARKDOWN_EXT | _HTML_EXT | _JSONL_EXT | _PLAIN_EXT
_HTML_START = re.compile(
    rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S
)
_MD_HEADING = re.compile(r"^#{1,6} \S", re.M)
# Old Office files are the one binary format people often try; say what to do with them.
_OLE = b"\xd0\xcf\x11\xe0"


def read_failure(path: Path, exc: OSError) -> ParseError:
    """Build the ParseError for a file the operating system would not let us read."""
    reason = exc.strerror or type(exc).__name__
    return ParseError(f"{sanitize_name(path.name)} could not be read ({reason}).")


def mislabelled(name: str, suffix: str, head: bytes) -> str | None:
    """The sentence for a file whose name promises a kind its content is not (a PDF, a Word
    file, text that is a ZIP archive), or None.

    Such a file is refused rather than read as what it is: a ".pdf" that holds text is most often
    a download that failed (an error or sign-in page), which nobody wants in their knowledge base.
    """
    if suffix == ".pdf" and b"%PDF-" not in head[:1024]:
        return (
            f"{name} is named .pdf but its content is not a PDF; get the real file, or rename"
            " it to .txt if it is text."
        )
    if suffix == ".docx" and not head.startswith(b"PK\x03\x04"):
        return f"{name} is named .docx but is not a Word (.docx) file; save it again as .docx."
    if suffix in _TEXT_EXT and head.startswith(b"PK\x03\x04"):
        # An archive named as text is not opened: its member list could be any size.
        return f"{name} is not a text document (binary content); supported: {SUPPORTED}."
    return None


def detect_kind(path: Path) -> str:
    """Return the document kind of `path` (one of KINDS); raise ParseError if unsupported.

    The content decides; the extension only names a text file's kind, and a `.pdf` or `.docx`
    whose content is not one is refused (`mislabelled`).
    """
    name = sanitize_name(path.name)
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD)
            blank = not head.strip() and _rest_is_blank(handle)
    except OSError as exc:
        raise read_failure(path, exc) from None
    if blank:
        raise ParseError(f"{name} is empty.")
    if refused := mislabelled(name, path.suffix.lower(), head):
        raise ParseError(refused)
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(path, name)
    if head.startswith(_OLE):
        raise ParseError(
            f"{name} is an old Microsoft Office file (.doc/.xls/.ppt); save it as .docx or PDF."
        )
    text = None if looks_binary(head) else _decode_head(head)
    if text is None:
        raise ParseError(f"{name} is not a text document (binary content); supported: {SUPPORTED}.")
    if not text.strip("\ufeff \t\r\n\x0b\x0c") and len(head) < _HEAD:
        raise ParseError(f"{name} is empty.")
    return _text_kind(path.suffix.lower(), head, text)


def _rest_is_blank(handle: BinaryIO) -> bool:
    while block := handle.read(1024 * 1024):
        if block.strip():
            return False
    return True


def _decode_head(head: bytes) -> str | None:
    """Decode the first bytes of a file; a 64 KB cut may split a multi-byte character."""
    cuts = range(4) if len(head) == _HEAD else range(1)
    for cut in cuts:
        text = decode_text(head[: len(head) - cut])
        if text is not None:
            return text
    return None


def _zip_kind(path: Path, name: str) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        raise ParseError(f"{name} is a damaged ZIP or Office file and cannot be opened.") from None
    if "word/document.xml" in names:
        return "docx"
    if "xl/workbook.xml" in names or "ppt/presentation.xml" in names:
        raise ParseError(
            f"{name} is an Excel or PowerPoint file; save it as PDF, or export the text, and add that."
        )
    raise ParseError(f"{name} is a ZIP archive, not a document; supported: {SUPPORTED}.")


def _text_kind(ext: str, head: bytes, text: str) -> str:
    if ext in _JSONL_EXT:
        return "jsonl"
    if ext in _HTML_EXT or _HTML_START.match(head.lstrip(b"\xef\xbb\xbf")):
        return "html"
    if ext in _MARKDOWN_EXT:
        return "markdown"
    if ext in _PLAIN_EXT:
        return "text"
    # No telling extension: Markdown if it has Markdown headings, plain text otherwise.
    return "markdown" if _MD_HEADING.search(text) else "text"
