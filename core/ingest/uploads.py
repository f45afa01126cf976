"""Check an uploaded file before it is staged (docs/architecture.md §10): its size, and that its
extension is one Zhixing parses.

Streamlit's uploader checks both in the browser and at its upload endpoint; this is the check
that holds whatever client sent the bytes. What the content is, is `detect.py`'s to say: it runs
on every staged file, as on every file `zhixing add` is given, and a file whose content
contradicts its name (a ".pdf" of text, a ".md" of binary) fails alone, listed with its reason,
never taking the other files of the upload with it. `screen_uploads` sorts an upload's files
into those to stage and those refused, each with its sentence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..errors import ParseError
from .file_names import sanitize_name

__all__ = ["UPLOAD_SUFFIXES", "Refusal", "UploadRefusedError", "check_upload", "screen_uploads"]

# What the pipeline parses, by extension (detect.py's lists).
UPLOAD_SUFFIXES: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    **dict.fromkeys((".md", ".markdown", ".mdown", ".mkd", ".mdx"), "markdown"),
    **dict.fromkeys((".txt", ".text", ".log", ".csv", ".tsv"), "text"),
    **dict.fromkeys((".html", ".htm", ".xhtml"), "html"),
    **dict.fromkeys((".jsonl", ".ndjson"), "jsonl"),
}
MiB = 1024 * 1024


class UploadRefusedError(ParseError):
    """An uploaded file is too big or not a type Zhixing reads; the message names the file."""


def check_upload(name: str, content: bytes, *, max_mb: int) -> str:
    """Return the upload's kind by its extension; raise UploadRefusedError when it is refused."""
    clean = sanitize_name(name)
    if len(content) > max_mb * MiB:
        raise UploadRefusedError(
            f"{clean} is {len(content) / MiB:.1f} MB, over the {max_mb} MB upload limit."
        )
    suffix = PurePosixPath(clean).suffix.lower()
    kind = UPLOAD_SUFFIXES.get(suffix)
    if kind is None:
        raise UploadRefusedError(
            f"{clean} is not a supported type ({suffix or 'no extension'}); upload one of "
            f"{', '.join(sorted(UPLOAD_SUFFIXES))}."
        )
    return kind


@dataclass(frozen=True)
class Refusal:
    """An uploaded file that is not staged: its clean name, content hash and the reason."""

    source: str
    sha256: str
    error: str


def screen_uploads(
    uploads: Sequence[tuple[str, bytes]], *, max_mb: int
) -> tuple[list[tuple[str, bytes]], list[Refusal]]:
    """Split uploads (name, content) into those to stage and those `check_upload` refuses."""
    accepted: list[tuple[str, bytes]] = []
    refused: list[Refusal] = []
    for name, content in uploads:
        try:
            check_upload(name, content, max_mb=max_mb)
        except UploadRefusedError as exc:
            digest = hashlib.sha256(content).hexdigest()
            refused.append(Refusal(sanitize_name(name), digest, str(exc)))
        else:
            accepted.append((name, content))
    return accepted, refused
