"""Unpacking an untrusted archive in a child process that a memory limit and a deadline hold.

`unpack_in_child(archive, folder, …)` runs this module as `python -m zhixing.core.unpack` (the
same interpreter, stdlib only, so it starts in tens of milliseconds from the Streamlit server
and from `zhixing run` alike). The child caps its own address space (`RLIMIT_AS`) before it
opens the archive, checks the raw headers (core/archives.py), then every entry (path traversal,
links, device files, declared sizes), and only then extracts into `folder`, counting the bytes
it writes. It answers one JSON line: nothing, or the sentence of its refusal. The parent kills
it past `UNPACK_TIMEOUT_S`; a child that dies (out of memory) is a refusal too. The caller owns
`folder` and removes it on any refusal.
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import re
import stat
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from .archives import (
    MAX_NAME_BYTES,
    check_zip_directory,
    open_tar_stream,
    shown,
    walk_tar,
)
from .errors import AccessError, ZhixingError

__all__ = ["UNPACK_MEMORY_BYTES", "UNPACK_TIMEOUT_S", "unpack_in_child"]

MiB = 1024 * 1024
UNPACK_MEMORY_BYTES = 256 * MiB  # the child's address space; it streams in 1 MiB pieces
UNPACK_TIMEOUT_S = 120.0
_DIRECTORY_BYTES_PER_ENTRY = 1200  # a central-directory record with a long name and extras


def unpack_in_child(archive: Path, folder: Path, *, max_entries: int, max_bytes: int) -> None:
    """Check and extract `archive` into the existing empty `folder` in a limited child."""
    label = shown(archive.name, 60)[1:-1]
    spec: dict[str, object] = {"archive": str(archive), "folder": str(folder), "label": label}
    spec |= {"max_entries": max_entries, "max_bytes": max_bytes}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "zhixing.core.unpack", json.dumps(spec)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=UNPACK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AccessError(
            f"{label} took more than {UNPACK_TIMEOUT_S:g} s to unpack; unpack a smaller project."
        ) from None
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        raise AccessError(
            f"{label} could not be unpacked within {UNPACK_MEMORY_BYTES // MiB} MiB of memory;"
            " unpack a smaller project."
        )
    if answer.get("error"):
        raise AccessError(str(answer["error"])[:400])


# --- in the child ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str  # as written in the archive; `path` is the checked relative posix path
    problem: str | None  # why this kind of entry is forbidden, if it is
    is_dir: bool
    size: int
    source: zipfile.ZipInfo | tarfile.TarInfo
    path: str = ""


def _unpack(archive: Path, folder: Path, label: str, max_entries: int, max_bytes: int) -> None:
    if archive.name.lower().endswith(".zip"):
        check_zip_directory(
            archive,
            label,
            max_entries=max_entries,
            max_directory_bytes=max_entries * _DIRECTORY_BYTES_PER_ENTRY,
        )
        with zipfile.ZipFile(archive) as zf:
            entries = _check_entries(_zip_entries(zf), label, max_entries, max_bytes)
            _extract(entries, folder, max_bytes, lambda e: zf.open(cast(zipfile.ZipInfo, e.source)))
        return
    stream, mode = open_tar_stream(archive)
    with stream:
        walk_tar(stream, label, max_entries=max_entries, max_bytes=max_bytes)
    with tarfile.open(archive, mode) as tf:
        entries = _check_entries(_tar_entries(tf), label, max_entries, max_bytes)
        _extract(
            entries, folder, max_bytes, lambda e: tf.extractfile(cast(tarfile.TarInfo, e.source))
        )


def _zip_entries(zf: zipfile.ZipFile) -> Iterator[_Entry]:
    for info in zf.infolist():
        mode = info.external_attr >> 16  # Unix mode, when the archiver recorded one
        problem = None
        if stat.S_ISLNK(mode):
            problem = "is a symbolic link"
        elif stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            problem = "is a device or special file"
        elif info.flag_bits & 0x1:
            problem = "is encrypted"
        size = 0 if info.is_dir() else info.file_size  # declared; reading never exceeds it
        yield _Entry(info.filename, problem, info.is_dir(), size, info)


def _tar_entries(tf: tarfile.TarFile) -> Iterator[_Entry]:
    for member in tf:  # the raw walk bounded every header already
        problem = None
        if member.issym() or member.islnk():
            problem = f"is a link to {shown(member.linkname)}"
        elif not (member.isfile() or member.isdir()):
            problem = "is a device or special file"
        size = member.size if member.isfile() else 0
        yield _Entry(member.name, problem, member.isdir(), size, member)


def _check_entries(
    raw: Iterator[_Entry], label: str, max_entries: int, max_bytes: int
) -> list[_Entry]:
    entries: list[_Entry] = []
    total = 0
    for entry in raw:
        if len(entries) >= max_entries:
            raise AccessError(
                f"{label} has more than {max_entries} entries; unpack a smaller project."
            )
        if entry.problem:
            raise AccessError(f"{label} was refused: entry {shown(entry.name)} {entry.problem}.")
        path = _safe_entry_name(entry.name)
        if path is None:
            raise AccessError(
                f"{label} was refused: entry {shown(entry.name)} points outside the archive "
                "folder (an absolute path or '..')."
            )
        if len(entry.name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise AccessError(
                f"{label} was refused: entry {shown(entry.name)} has a name longer than"
                f" {MAX_NAME_BYTES} bytes."
            )
        total += entry.size
        if total > max_bytes:
            raise AccessError(
                f"{label} unpacks to more than {_human(max_bytes)}; unpack a smaller project."
            )
        entries.append(dataclasses.replace(entry, path=path))
    return entries


def _safe_entry_name(name: str) -> str | None:
    """Return the entry's relative posix path, or None when it is absolute or climbs out."""
    unified = name.replace("\\", "/")
    if not unified.strip("/") or "\x00" in unified:
        return None
    if unified.startswith("/") or re.match(r"^[A-Za-z]:", unified):
        return None
    parts = [p for p in unified.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _extract(
    entries: list[_Entry],
    folder: Path,
    max_bytes: int,
    open_entry: Callable[[_Entry], IO[bytes] | None],
) -> None:
    budget = max_bytes
    root = folder.resolve()
    for entry in entries:
        target = (folder / entry.path).resolve()
        if not target.is_relative_to(root):  # belt and braces: names were checked already
            raise AccessError(f"Entry {shown(entry.name)} resolves outside the archive folder.")
        if entry.is_dir:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        src = open_entry(entry)
        if src is None:
            raise AccessError(f"Entry {shown(entry.name)} could not be read.")
        with src, open(target, "wb") as out:
            budget -= _copy_capped(src, out, budget, entry.name)


def _copy_capped(src: IO[bytes], out: IO[bytes], budget: int, name: str) -> int:
    """Copy and return the byte count; stop when the real size exceeds what was declared."""
    written = 0
    while chunk := src.read(MiB):
        written += len(chunk)
        if written > budget:
            raise AccessError(f"Entry {shown(name)} unpacks to more than the archive declared.")
        out.write(chunk)
    return written


def _human(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n} bytes"


def _limit_memory(limit: int) -> None:
    try:
        import resource
    except ImportError:  # not a POSIX system: the deadline still holds
        return
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    label = str(spec["label"])
    _limit_memory(UNPACK_MEMORY_BYTES)
    answer: dict[str, object] = {}
    try:
        _unpack(
            Path(spec["archive"]),
            Path(spec["folder"]),
            label,
            int(spec["max_entries"]),
            int(spec["max_bytes"]),
        )
    except ZhixingError as exc:
        answer = {"error": str(exc)}
    except MemoryError:
        answer = {
            "error": f"{label} needs more than {UNPACK_MEMORY_BYTES // MiB} MiB of memory to"
            " unpack; unpack a smaller project."
        }
    except (
        zipfile.BadZipFile,
        tarfile.TarError,
        EOFError,
        OSError,
        ValueError,
        zlib.error,
        lzma.LZMAError,
    ) as exc:
        # A library's message may quote an entry's name: only a short, escaped part of it.
        answer = {"error": f"{label} could not be unpacked: {shown(str(exc), 80)[1:-1]}."}
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
