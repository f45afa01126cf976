"""The archive format of a knowledge-base backup: writing it, and reading it back safely.

See core/backup/__init__.py for what the members hold.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ..archives import NotAZipFile, check_zip_directory
from ..errors import AccessError, ParseError, StoreError
from ..models import BUILD_MODES
from ..store.analysis import ANALYSIS_VERSION
from ..store.kb_rows import KB_TABLES, required_columns
from ..store.vectors import KINDS

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "MAX_IMPORT_BYTES",
    "TABLES",
    "Archive",
    "read_archive",
    "write_archive",
]

FORMAT = "zhixing-kb"
FORMAT_VERSION = 1

TABLES = KB_TABLES  # the tables of one knowledge base, in dependency order
MANIFEST = "manifest.json"
_RECORDS = "vectors/records.jsonl"
_DENSE = "vectors/dense.npy"
# Import reads an archive whole in memory, so what it may unpack to is bounded twice: by a
# ratio to its own size (exports measure 1.5-3x: JSON lines compress ~4x, vectors hardly at
# all; 20 leaves room for text-heavy ones) and by an absolute cap.
_MAX_RATIO = 20
MAX_IMPORT_BYTES = 1024 * 1024 * 1024
_MAX_MEMBERS = 64  # an export has 12
_MAX_DIRECTORY_BYTES = 64 * 1024  # checked before zipfile reads the central directory whole


@dataclass
class Archive:
    manifest: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    records: list[dict[str, Any]]
    dense: np.ndarray


# --- writing an archive ----------------------------------------------------------------------


def write_archive(
    path: Path,
    manifest: dict[str, Any],
    tables: dict[str, list[dict[str, Any]]],
    records: list[dict[str, Any]],
    dense: np.ndarray,
) -> None:
    """Write the archive next to `path` first, then move it in place: never a half file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2))
            for table, rows in tables.items():
                zf.writestr(f"tables/{table}.jsonl", _jsonl(rows))
            zf.writestr(_RECORDS, _jsonl(records))
            buffer = io.BytesIO()
            np.save(buffer, dense, allow_pickle=False)
            zf.writestr(_DENSE, buffer.getvalue())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"The archive {path} cannot be written: {exc.strerror or exc}.") from exc


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# --- reading an archive --------------------------------------------------------------------


def open_zip(
    path: Path, kind: str, noun: str, *, max_entries: int, max_directory_bytes: int
) -> zipfile.ZipFile:
    """Open a zip whose central directory was checked first (core/archives.py); anything that
    is not one, or cannot be read, is a ParseError naming `kind` ("a Zhixing home backup") or
    `noun` ("backup")."""
    try:
        check_zip_directory(
            path, str(path), max_entries=max_entries, max_directory_bytes=max_directory_bytes
        )
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, NotAZipFile):
        raise ParseError(f"{path} is not {kind} (not a zip file, or truncated).") from None
    except AccessError as exc:
        raise ParseError(str(exc)) from None
    except OSError as exc:
        raise ParseError(f"The {noun} {path} cannot be read: {exc.strerror or exc}.") from exc


def read_archive(path: Path) -> Archive:
    """Read and validate a whole archive in memory; raise ParseError on anything amiss."""
    zf = open_zip(
        path,
        "a Zhixing knowledge-base archive",
        "archive",
        max_entries=_MAX_MEMBERS,
        max_directory_bytes=_MAX_DIRECTORY_BYTES,
    )
    size = path.stat().st_size
    with zf:
        _check_members(zf, path, size)
        manifest = _check_manifest(_json(_member(zf, path, MANIFEST), path, MANIFEST), path)
        tables = {t: _lines(zf, path, f"tables/{t}.jsonl", required_columns(t)) for t in TABLES}
        records = _lines(zf, path, _RECORDS, ("kind", "ref_id", "doc", "text"))
        try:
            dense = np.load(io.BytesIO(_member(zf, path, _DENSE)), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ParseError(f"{path} is corrupt: its {_DENSE} cannot be read.") from exc
    counts = {t: len(rows) for t, rows in tables.items()} | {"vectors": len(records)}
    if {k: manifest["counts"].get(k) for k in counts} != counts:
        raise ParseError(f"{path} is corrupt: its tables do not match the counts in its manifest.")
    if dense.dtype != np.float32 or dense.shape != (
        len(records),
        manifest["embedding"]["dimension"],
    ):
        raise ParseError(f"{path} is corrupt: its vectors do not match its records.")
    if any(r["kind"] not in KINDS for r in records):
        raise ParseError(f"{path} is corrupt: a vector has an unknown kind.")
    return Archive(manifest, tables, records, dense)


def _check_members(zf: zipfile.ZipFile, path: Path, size: int) -> None:
    names = [info.filename for info in zf.infolist()]
    for name in names:
        parts = PurePosixPath(name).parts
        if name.startswith("/") or "\\" in name or ":" in name or ".." in parts:
            raise ParseError(
                f"{path} holds a member that points outside the archive ({name!r}); it was not read."
            )
    if len(set(names)) != len(names):
        raise ParseError(f"{path} is corrupt: it holds the same member twice.")
    total = sum(info.file_size for info in zf.infolist())
    cap = min(_MAX_RATIO * size + (1 << 20), MAX_IMPORT_BYTES)
    if total > cap:
        raise ParseError(
            f"{path} would unpack to far more than its own size ({total / (1 << 20):.1f} MiB;"
            f" an import reads at most {_MAX_RATIO} times the archive's size and"
            f" {MAX_IMPORT_BYTES >> 20} MiB in all); it was not read."
        )


def _member(zf: zipfile.ZipFile, path: Path, name: str) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        if name == MANIFEST:
            raise ParseError(
                f"{path} is not a Zhixing knowledge-base archive (it has no {MANIFEST})."
            ) from None
        raise ParseError(f"{path} is incomplete: it has no {name}.") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ParseError(f"{path} is corrupt or truncated: {name} cannot be read.") from exc


def _json(data: bytes, path: Path, name: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParseError(f"{path} is corrupt: {name} is not valid JSON.") from exc


def _lines(
    zf: zipfile.ZipFile, path: Path, name: str, columns: Sequence[str]
) -> list[dict[str, Any]]:
    rows = [_json(line, path, name) for line in _member(zf, path, name).splitlines() if line]
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not set(columns) <= row.keys():
            raise ParseError(f"{path} is corrupt: line {number} of {name} lacks some fields.")
    return rows


def _check_manifest(manifest: Any, path: Path) -> dict[str, Any]:
    """Check the manifest's format, version and fields; return it."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ParseError(f"{path} is not a Zhixing knowledge-base archive.")
    version = manifest.get("version")
    if version != FORMAT_VERSION:
        raise ParseError(
            f"{path} has archive format version {version!r}; this Zhixing reads version"
            f" {FORMAT_VERSION} only."
        )
    kb, embedding = manifest.get("kb") or {}, manifest.get("embedding") or {}
    try:
        ok = kb["build_mode"] in BUILD_MODES and isinstance(manifest["counts"], dict)
        ok = ok and all(isinstance(v, str) for v in (kb["name"], embedding["name"]))
        ok = ok and all(type(v) is int for v in (kb["analysis"], embedding["dimension"]))
    except (KeyError, TypeError):
        ok = False
    if not ok or embedding["dimension"] < 1:
        raise ParseError(f"{path} is corrupt: its {MANIFEST} lacks or garbles some fields.")
    if kb["analysis"] > ANALYSIS_VERSION:
        raise ParseError(
            f"{path} was made by a newer Zhixing (text analysis {kb['analysis']}); upgrade to"
            " import it."
        )
    return manifest
