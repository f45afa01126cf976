"""The task agent's workspace: an uploaded project unpacked safely, and read-only tools over it.

`unpack_archive` checks every entry of a `.zip` / `.tar.gz` / `.tgz` / `.tar` before it writes
anything (docs/architecture.md §10: path traversal, links, device files, size bombs) and extracts into a temporary
folder that is renamed only on success. `Workspace` offers `list_files`, `read_file` and `grep`,
all confined to its root. Refusals raise `AccessError`, missing paths `NotFoundError`, bad
arguments `ZhixingError`; each message is one sentence.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, cast

import regex

from zhixing.core.errors import AccessError, NotFoundError, ZhixingError

__all__ = [
    "ARCHIVE_SUFFIXES",
    "GrepHit",
    "Workspace",
    "is_archive",
    "open_workspace",
    "unpack_archive",
]

MiB = 1024 * 1024
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
GREP_MAX_FILE_BYTES = 2 * MiB  # bigger files are data dumps or bundles, not code worth grepping
GREP_MAX_LINE_CHARS = 300
MAX_PATTERN_CHARS = 500
GREP_TIMEOUT_S = 3.0  # for one grep over the whole workspace
_BINARY_SNIFF_BYTES = 8192
_LINE_END = "\r\n"


@dataclass(frozen=True)
class GrepHit:
    """One matching line: a path relative to the workspace root and a 1-based line number."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


# --- unpacking ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str  # as written in the archive; `path` is the checked relative posix path
    problem: str | None  # why this kind of entry is forbidden, if it is
    is_dir: bool
    size: int
    source: zipfile.ZipInfo | tarfile.TarInfo
    path: str = ""


def is_archive(path: Path) -> bool:
    """Return whether the file name ends with one of the supported archive suffixes."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def unpack_archive(
    archive: Path, dest: Path, *, max_entries: int = 5000, max_bytes: int = 200 * MiB
) -> Workspace:
    """Check every entry of `archive`, then extract it to `dest` (which must not exist yet)."""
    archive, dest = Path(archive), Path(dest)
    if not archive.is_file():
        raise NotFoundError(f"The archive {archive} does not exist.")
    if not is_archive(archive):
        raise AccessError(
            f"{archive.name} is not a supported archive; use one of {', '.join(ARCHIVE_SUFFIXES)}."
        )
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise AccessError(f"Cannot unpack into {dest}: it already exists and is not empty.")
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                entries = _check_entries(_zip_entries(zf), archive, max_entries, max_bytes)
                _extract(
                    entries, dest, max_bytes, lambda e: zf.open(cast(zipfile.ZipInfo, e.source))
                )
        else:
            with tarfile.open(archive, "r:*") as tf:
                entries = _check_entries(_tar_entries(tf), archive, max_entries, max_bytes)
                _extract(
                    entries,
                    dest,
                    max_bytes,
                    lambda e: tf.extractfile(cast(tarfile.TarInfo, e.source)),
                )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise AccessError(f"{archive.name} could not be unpacked: {exc}.") from exc
    return Workspace(dest)


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
    for member in tf:  # lazily, so a huge member count is caught before it is all read
        problem = None
        if member.issym() or member.islnk():
            problem = f"is a link to {member.linkname!r}"
        elif not (member.isfile() or member.isdir()):
            problem = "is a device or special file"
        size = member.size if member.isfile() else 0
        yield _Entry(member.name, problem, member.isdir(), size, member)


def _check_entries(
    raw: Iterator[_Entry],
    archive: Path,
    max_entries: int,
    max_bytes: int,
) -> list[_Entry]:
    entries: list[_Entry] = []
    total = 0
    for entry in raw:
        if len(entries) >= max_entries:
            raise AccessError(
                f"{archive.name} has more than {max_entries} entries; unpack a smaller project."
            )
        if entry.problem:
            raise AccessError(f"{archive.name} was refused: entry {entry.name!r} {entry.problem}.")
        path = _safe_entry_name(entry.name)
        if path is None:
            raise AccessError(
                f"{archive.name} was refused: entry {entry.name!r} points outside the archive "
                "folder (an absolute path or '..')."
            )
        total += entry.size
        if total > max_bytes:
            raise AccessError(
                f"{archive.name} unpacks to more than {_human(max_bytes)}; unpack a smaller project."
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
    dest: Path,
    max_bytes: int,
    open_entry: Callable[[_Entry], IO[bytes] | None],
) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", suffix=".partial", dir=dest.parent))
    try:
        budget = max_bytes
        root = tmp.resolve()
        for entry in entries:
            target = (tmp / entry.path).resolve()
            if not _inside(target, root):  # belt and braces: names were checked already
                raise AccessError(f"Entry {entry.name!r} resolves outside the archive folder.")
            if entry.is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = open_entry(entry)
            if src is None:
                raise AccessError(f"Entry {entry.name!r} could not be read.")
            with src, open(target, "wb") as out:
                budget -= _copy_capped(src, out, budget, entry.name)
        if dest.exists():
            dest.rmdir()  # empty, checked by the caller; rename cannot replace it everywhere
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _copy_capped(src: IO[bytes], out: IO[bytes], budget: int, name: str) -> int:
    """Copy and return the byte count; stop when the real size exceeds what was declared."""
    written = 0
    while chunk := src.read(1024 * 1024):
        written += len(chunk)
        if written > budget:
            raise AccessError(f"Entry {name!r} unpacks to more than the archive declared.")
        out.write(chunk)
    return written


# --- the workspace -----------------------------------------------------------------------------


class Workspace:
    """Read-only tools over one project folder; no path ever leaves `root`."""

    def __init__(self, root: Path) -> None:
        root = Path(root)
        if not root.is_dir():
            raise NotFoundError(f"The workspace folder {root} does not exist.")
        self.root = root.resolve()

    @classmethod
    def from_dir(cls, path: Path) -> Workspace:
        """Use an existing folder as it is, without copying it."""
        return cls(path)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def list_files(self, glob: str = "**/*", limit: int = 500) -> list[str]:
        """Return up to `limit` files matching `glob`, as sorted paths relative to the root."""
        matches = _glob_matcher(glob)
        return sorted(p for p in self._walk() if matches(p))[: max(limit, 0)]

    def read_file(
        self, path: str, start: int = 1, end: int | None = None, max_bytes: int = 200_000
    ) -> str:
        """Return lines `start`..`end` (1-based, inclusive) of a text file, numbered "12| code"."""
        if start < 1 or (end is not None and end < start):
            raise ZhixingError(f"Line range {start}..{end} is invalid; start at 1, end >= start.")
        target = self._resolve(path)
        if _is_binary(target):
            raise AccessError(f"{path} looks like a binary file; only text files can be read.")
        out: list[str] = []
        size = 0
        last = 0
        with open(target, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                last = number
                if number < start:
                    continue
                if end is not None and number > end:
                    break
                line = f"{number}| {_decode(raw).rstrip(_LINE_END)}"
                size += len(line.encode()) + 1
                if size > max_bytes:
                    out.append(f"[truncated at {max_bytes} bytes; read on from line {number}]")
                    break
                out.append(line)
        if last < start and not (start == 1 and last == 0):
            raise ZhixingError(f"{path} has only {last} lines; start at line {last} or earlier.")
        return "\n".join(out)

    def grep(
        self, pattern: str, glob: str = "**/*", limit: int = 200, ignore_case: bool = False
    ) -> list[GrepHit]:
        """Return up to `limit` lines matching the regular expression `pattern`, file by file."""
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ZhixingError(f"The pattern is longer than {MAX_PATTERN_CHARS} characters.")
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except (regex.error, ValueError) as exc:
            raise ZhixingError(f"{pattern!r} is not a valid regular expression: {exc}.") from exc
        hits: list[GrepHit] = []
        # The pattern may come from a model (or a document steering it): one that backtracks
        # without end is stopped by the regex module's timeout, not left to hold the server,
        # and matches with the GIL released (), so other sessions go on meanwhile.
        deadline = time.monotonic() + GREP_TIMEOUT_S
        for rel in self.list_files(glob, limit=10**9):
            path = self.root / rel
            if path.stat().st_size > GREP_MAX_FILE_BYTES or _is_binary(path):
                continue
            with open(path, "rb") as fh:
                for number, raw in enumerate(fh, start=1):
                    text = _decode(raw).rstrip(_LINE_END)
                    left = deadline - time.monotonic()
                    try:
                        if left <= 0:
                            raise TimeoutError
                        found = compiled.search(text, timeout=left, concurrent=True)
                    except TimeoutError:
                        raise ZhixingError(
                            f"The pattern {pattern[:80]!r} took longer than {GREP_TIMEOUT_S:g} s"
                            " to search the workspace; use a simpler pattern."
                        ) from None
                    if found:
                        hits.append(GrepHit(rel, number, text.strip()[:GREP_MAX_LINE_CHARS]))
                        if len(hits) >= limit:
                            return hits
        return hits

    def _walk(self) -> Iterator[str]:
        """Yield relative paths of regular files, skipping hidden folders and outside links."""
        for folder, dirs, files in os.walk(self.root, followlinks=False):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            base = Path(folder)
            for name in files:
                full = base / name
                if full.is_symlink() and not _inside(full.resolve(), self.root):
                    continue
                if full.is_file():
                    yield full.relative_to(self.root).as_posix()

    def _resolve(self, path: str) -> Path:
        """Map a workspace-relative path to a real file inside the root, or refuse."""
        pure = PurePosixPath(path.replace("\\", "/"))
        if pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
            raise AccessError(f"{path} is an absolute path; give a path relative to the workspace.")
        if ".." in pure.parts:
            raise AccessError(f"{path} climbs out of the workspace with '..'; it was refused.")
        target = (self.root / pure).resolve()
        if not _inside(target, self.root):
            raise AccessError(f"{path} links to a place outside the workspace; it was refused.")
        if not target.exists():
            raise NotFoundError(f"{path} does not exist in the workspace.")
        if not target.is_file():
            raise ZhixingError(f"{path} is a folder, not a file; use list_files to see inside.")
        return target


def open_workspace(path: Path, runs_dir: Path) -> Workspace:
    """Use a folder as it is, or unpack an archive into a new per-run folder under `runs_dir`."""
    path = Path(path)
    if path.is_dir():
        return Workspace.from_dir(path)
    if not path.exists():
        raise NotFoundError(f"The workspace {path} does not exist.")
    if not is_archive(path):
        raise AccessError(
            f"{path.name} is neither a folder nor a {', '.join(ARCHIVE_SUFFIXES)} archive."
        )
    run_name = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    return unpack_archive(path, Path(runs_dir) / run_name / "workspace")


def _glob_matcher(glob: str) -> Callable[[str], bool]:
    """Compile a glob: `**` crosses folders, `*` and `?` do not; no `/` means "any folder"."""
    unified = glob.replace("\\", "/").strip() or "**/*"
    if unified.startswith("/") or ".." in unified.split("/"):
        raise AccessError(f"The glob {glob!r} must stay inside the workspace.")
    if "/" not in unified:
        unified = "**/" + unified
    expr = ""
    i = 0
    while i < len(unified):
        if unified.startswith("**/", i):
            expr, i = expr + "(?:.*/)?", i + 3
        elif unified.startswith("**", i):
            expr, i = expr + ".*", i + 2
        elif unified[i] == "*":
            expr, i = expr + "[^/]*", i + 1
        elif unified[i] == "?":
            expr, i = expr + "[^/]", i + 1
        else:
            expr, i = expr + re.escape(unified[i]), i + 1
    compiled = re.compile(expr + r"\Z")
    return lambda rel: compiled.match(rel) is not None


def _human(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n} bytes"


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _is_binary(path: Path) -> bool:
    with open(path, "rb") as fh:
        return b"\x00" in fh.read(_BINARY_SNIFF_BYTES)


def _decode(raw: bytes) -> str:
    """Decode one line: UTF-8 first, then GB18030 (common in Chinese projects), never failing."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("gb18030", errors="replace")
