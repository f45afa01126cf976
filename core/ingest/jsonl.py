"""Read a JSONL corpus (`{"id", "title", "text"}` per line), one document per line, streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import ParseError
from ..models import Page, ParsedDocument
from .detect import detect_kind, read_failure
from .file_names import sanitize_name
from .textcodec import normalize_newlines

__all__ = ["iter_jsonl"]


def iter_jsonl(path: Path) -> Iterator[tuple[int, ParsedDocument | ParseError]]:
    """Yield (line number, document or the ParseError for that line) for each non-blank line.

    A bad line does not stop the corpus: its error is yielded and reading goes on. A file that
    is empty, binary or unreadable raises ParseError here, before any line is read.
    """
    name = sanitize_name(path.name)
    kind = detect_kind(path)  # raises for an empty, binary or unreadable file
    if kind in ("pdf", "docx"):
        raise ParseError(f"{name} is a {kind.upper()} file, not a JSONL corpus.")
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise read_failure(path, exc) from None
    return _lines(handle, name)


def _lines(handle: BinaryIO, name: str) -> Iterator[tuple[int, ParsedDocument | ParseError]]:
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            yield number, _record(raw, number, name)


def _record(raw: bytes, number: int, name: str) -> ParsedDocument | ParseError:
    where = f"line {number} of {name}"
    try:
        line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError:
        return ParseError(f"{where}: not valid UTF-8 text; save the corpus as UTF-8.")
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return ParseError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}).")
    if not isinstance(record, dict):
        return ParseError(f'{where}: expected an object like {{"id", "title", "text"}}.')
    if "text" not in record:
        return ParseError(f'{where}: missing "text".')
    text = record["text"]
    if not isinstance(text, str):
        return ParseError(f'{where}: "text" must be a string.')
    if not text.strip():
        return ParseError(f"{where}: empty text.")
    identifier = record.get("id")
    if identifier is None or isinstance(identifier, (dict, list)) or not str(identifier).strip():
        return ParseError(f'{where}: missing "id".')
    source = str(identifier)
    title = record.get("title")
    title = title.strip() if isinstance(title, str) and title.strip() else source
    return ParsedDocument(source, "jsonl", title, (Page(1, normalize_newlines(text)),))
