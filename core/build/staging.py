"""Uploads staged for a build: saved by their sanitized names under a job's folder, refused
whole when any is too big or of a type Zhixing does not read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..config import Settings
from ..ingest import sanitize_name
from ..ingest.uploads import UploadRefusedError, check_upload

__all__ = ["stage_uploads"]


def stage_uploads(
    folder: Path, uploads: Sequence[tuple[str, bytes]], *, max_upload_mb: int | None = None
) -> list[Path]:
    """Save uploads by their sanitized names; a repeated name goes to a subfolder so that the
    pipeline reports it as a duplicate instead of one file silently replacing the other.

    Checked first (`_check_uploads`): nothing is written when any upload is refused.
    """
    _check_uploads(uploads, max_upload_mb)
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    seen: set[str] = set()
    for i, (name, content) in enumerate(uploads):
        clean = sanitize_name(name)
        target = folder / clean if clean not in seen else folder / f"dup-{i}" / clean
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        seen.add(clean)
        paths.append(target)
    return paths


def _check_uploads(uploads: Sequence[tuple[str, bytes]], max_upload_mb: int | None) -> None:
    """Refuse the whole upload, naming each file that is too big or of a type Zhixing does not
    read, in the page's spirit: bad input creates nothing (the page deletes a knowledge base it
    just made when its first build cannot start). Streamlit's uploader checks both as well, but
    only for its own widget; this holds for any caller."""
    limit = Settings.max_upload_mb if max_upload_mb is None else max_upload_mb
    refused = []
    for name, content in uploads:
        try:
            check_upload(name, content, max_mb=limit)
        except UploadRefusedError as exc:
            refused.append(str(exc))
    if refused:
        raise UploadRefusedError(" ".join(refused))
