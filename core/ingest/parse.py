"""Parse one document file of any supported kind: the entry point the build pipeline calls."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import ParseError
from ..models import ParsedDocument
from .detect import KINDS, detect_kind
from .file_names import sanitize_name
from .html import parse_html
from .pdf import parse_pdf
from .plain import parse_markdown, parse_text
from .word import parse_docx

__all__ = ["parse_file"]

_PARSERS: dict[str, Callable[[Path, str], ParsedDocument]] = {
    "docx": parse_docx,
    "html": parse_html,
    "markdown": parse_markdown,
    "text": parse_text,
}


def parse_file(
    path: Path, *, source: str | None = None, kind: str | None = None, workers: int = 1
) -> ParsedDocument:
    """Parse a single-document file (not a .jsonl corpus: see `iter_jsonl`).

    `source` defaults to the sanitized file name; `kind` to what `detect_kind` finds; `workers`
    is how many processes may parse a PDF's pages. Every failure is a ParseError whose message
    is one sentence naming the file.
    """
    path = Path(path)
    name = source or sanitize_name(path.name)
    if kind is None:
        try:
            kind = detect_kind(path)
        except ParseError as exc:
            # detect_kind names the file on disk; the caller's source name is the one users know.
            on_disk = sanitize_name(path.name)
            message = str(exc)
            if message.startswith(on_disk):
                message = name + message[len(on_disk) :]
            raise ParseError(message) from None
    if kind == "jsonl":
        raise ParseError(
            f"{name} is a JSONL corpus (one document per line); read it with iter_jsonl."
        )
    if kind == "pdf":
        return parse_pdf(path, name, workers=workers)
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ParseError(
            f"{name}: unknown document kind {kind!r}; expected one of {', '.join(KINDS)}."
        )
    return parser(path, name)
