"""The task agent's workspace: an uploaded project unpacked safely, and read-only tools over it.

`unpack_archive` has a `.zip` / `.tar.gz` / `.tgz` / `.tar` checked from its raw headers and
entry by entry, then extracted, in a child process under a memory limit (core/unpack.py,
docs/architecture.md §10: path traversal, links, device files, size bombs, oversized headers),
into a temporary folder that is renamed only on success. `Workspace` offers `list_files`,
`read_file` and `grep`, all confined to its root; globs never backtrack (globs.py) and a tool
call's deadline covers its whole call. Refusals raise `AccessError`, missing paths
`NotFoundError`, bad arguments `ZhixingError`; each message is one sentence.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import regex

from ..archives import shown
from ..errors import AccessError, NotFoundError, ZhixingError
from ..unpack import unpack_in_child
from .globs import glob_matcher

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
TOOL_TIMEOUT_S = 3.0  # for one list_files or grep call, everything it does included
GREP_TIMEOUT_S = TOOL_TIMEOUT_S
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


def is_archive(path: Path) -> bool:
    """Return whether the file name ends with one of the supported archive suffixes."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def unpack_archive(
    archive: Path, dest: Path, *, max_entries: int = 5000, max_bytes: int = 200 * MiB
) -> Workspace:
    """Check every entry of `archive`, then extract it to `dest` (which must not exist yet).

    The work happens in a child process under a memory limit and a deadline (core/unpack.py);
    here a temporary folder beside `dest` receives it and is renamed only on success. On a
    refusal nothing is left behind.
    """
    archive, dest = Path(archive), Path(dest)
    if not archive.is_file():
        raise NotFoundError(f"The archive {archive} does not exist.")
    if not is_archive(archive):
        raise AccessError(
            f"{shown(archive.name)} is not a supported archive; use one of"
            f" {', '.join(ARCHIVE_SUFFIXES)}."
        )
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise AccessError(f"Cannot unpack into {dest}: it already exists and is not empty.")
    # The folder that holds `dest` (a run's own folder) goes too if this call made it; folders
    # above it may be shared with runs going on beside this one, and stay.
    made = not dest.parent.exists()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", suffix=".partial", dir=dest.parent))
    try:
        unpack_in_child(archive, tmp, max_entries=max_entries, max_bytes=max_bytes)
        if dest.exists():
            dest.rmdir()  # empty, checked above; rename cannot replace it everywhere
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(dest.parent if made else tmp, ignore_errors=True)
        raise
    return Workspace(dest)


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

    def list_files(
        self, glob: str = "**/*", limit: int = 500, *, deadline: float | None = None
    ) -> list[str]:
        """Return up to `limit` files matching `glob`, as sorted paths relative to the root.

        A tool call passes its `deadline` (a `time.monotonic()` instant) so that walking and
        matching stop with a sentence when it passes; the glob matcher is linear either way.
        """
        matches = glob_matcher(glob)
        found = []
        for path in self._walk():
            if deadline is not None and time.monotonic() > deadline:
                raise _too_slow(f"Listing {shown(glob)}", "a narrower glob")
            if matches(path):
                found.append(path)
        return sorted(found)[: max(limit, 0)]

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
        self,
        pattern: str,
        glob: str = "**/*",
        limit: int = 200,
        ignore_case: bool = False,
        *,
        deadline: float | None = None,
    ) -> list[GrepHit]:
        """Return up to `limit` lines matching the regular expression `pattern`, file by file.

        One deadline (`TOOL_TIMEOUT_S` from now unless given) covers listing and searching.
        """
        if deadline is None:
            deadline = time.monotonic() + TOOL_TIMEOUT_S
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ZhixingError(f"The pattern is longer than {MAX_PATTERN_CHARS} characters.")
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except (regex.error, ValueError) as exc:
            raise ZhixingError(
                f"{shown(pattern, 60)} is not a valid regular expression: {exc}."
            ) from exc
        hits: list[GrepHit] = []
        # The pattern may come from a model (or a document steering it): one that backtracks
        # without end is stopped by the regex module's timeout, not left to hold the server,
        # and matches with the GIL released (concurrent=True), so other sessions go on meanwhile.
        for rel in self.list_files(glob, limit=10**9, deadline=deadline):
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
                        raise _too_slow(
                            f"Searching for {shown(pattern, 60)}", "a simpler pattern"
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
            f"{shown(path.name)} is neither a folder nor a {', '.join(ARCHIVE_SUFFIXES)} archive."
        )
    run_name = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    return unpack_archive(path, Path(runs_dir) / run_name / "workspace")  # removes it if refused


def _too_slow(what: str, instead: str) -> ZhixingError:
    return ZhixingError(
        f"{what} took longer than {TOOL_TIMEOUT_S:g} s over the workspace; use {instead}."
    )


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
