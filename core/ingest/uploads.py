"""Check an uploaded file before it is staged (docs/architecture.md §10): its size, and that its type is one
Zhixing parses, by extension and by a look at its first bytes.

Streamlit's uploader filters types and sizes in the browser and at its upload endpoint; this is
the check that holds whatever client sent the bytes. Detecting the kind for parsing stays in
`detect.py`, which runs on every staged file again.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from zhixing.core.errors import ParseError
from zhixing.core.ingest.file_names import sanitize_name
from zhixing.core.ingest.textcodec import looks_binary

__all__ = ["UPLOAD_SUFFIXES", "UploadRefusedError", "check_upload"]

# What the pipeline parses, by extension (detect.py's lists).
UPLOAD_SUFFIXES: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    **dict.fromkeys((".md", ".markdown", ".mdown", ".mkd", ".mdx"), "markdown"),
    **dict.fromkeys((".txt", ".text", ".log", ".csv", ".tsv"), "text"),
    **dict.fromkeys((".html", ".htm", ".xhtml"), "html"),
    **dict.fromkeys((".jsonl", ".ndjson"), "jsonl"),
}
_HEAD = 64 * 1024
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
    head = content[:_HEAD]
    if kind == "pdf" and b"%PDF-" not in head[:1024]:
        raise UploadRefusedError(f"{clean} is named {suffix} but its content is not a PDF.")
    if kind == "docx" and not head.startswith(b"PK\x03\x04"):
        raise UploadRefusedError(f"{clean} is named {suffix} but is not a Word (.docx) file.")
    if kind not in ("pdf", "docx") and looks_binary(head):
        raise UploadRefusedError(f"{clean} is named {suffix} but holds binary content, not text.")
    return kind
