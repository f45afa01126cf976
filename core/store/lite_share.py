"""One Milvus Lite file, several processes (issue 38): the app, the CLI, `zhixing mcp` and
`langgraph dev` on one home at once.

Milvus Lite lets one process open its file (it takes an advisory lock on `<file>/LOCK`), and
serves it to that process through its own gRPC server on 127.0.0.1. So the first Zhixing
process to open a home's file holds it and writes where its server listens into
`<file>.serving` (owner-only, like the rest of the home); a later process finds the file held,
reads that note and connects to the holder's server as to a Milvus server. When the holder
closes or dies, a guest's next call opens the file again: it takes the file itself, or joins
whichever process took it first (core/store/vectors.py `VectorStore`).

The server listens on the loopback interface only, as Milvus Lite's does for its own process;
any local user could reach it there, as they could before this note existed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path

__all__ = ["WAIT_S", "holder", "is_held", "publish", "served", "withdraw"]

# How long a process that finds the file held waits for the holder's note: a holder writes it
# right after its open, and one that never does (Milvus Lite opened by another program) is told
# apart from a slow one only by waiting.
WAIT_S = 3.0


def is_held(uri: str) -> bool:
    """Tell whether another process holds Milvus Lite's advisory lock on this data dir."""
    lock = Path(uri) / "LOCK"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def holder(uri: str) -> int | None:
    """The process holding Milvus Lite's lock on this data dir, as Linux's /proc/locks tells
    it (None elsewhere, or when nobody holds it)."""
    try:
        info = os.stat(Path(uri) / "LOCK")
        lines = Path("/proc/locks").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 18545 fe:00:2163055 0 EOF": pid, then major:minor:inode in hex.
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
            return int(fields[4]) if fields[4].isdigit() else None
    return None


def _note(uri: str) -> Path:
    path = Path(uri)
    return path.with_name(path.name + ".serving")


def publish(uri: str) -> str:
    """Record, for other processes, where this process's Milvus Lite server for `uri` listens
    (this process holds the file); return that address."""
    from milvus_lite.server_manager import server_manager_instance

    address: str | None = server_manager_instance.start_and_get_uri(uri)  # already running here
    if not address:
        raise OSError(f"Milvus Lite has no server for {uri} in this process.")
    note = _note(uri)
    partial = note.with_name(f"{note.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"pid": os.getpid(), "uri": address}, out)
    os.replace(partial, note)  # whole or not at all: a reader never sees half a note
    return address


def withdraw(uri: str) -> None:
    """Remove this process's note (another process's, written since, stays)."""
    note = _note(uri)
    if _read(note).get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            note.unlink()


def served(uri: str) -> str | None:
    """The address of the server of the process that holds `uri` now, from its note; None
    when nobody holds the file or the note is not the holder's (stale, or not written yet)."""
    note = _read(_note(uri))
    pid, address = note.get("pid"), note.get("uri")
    if not isinstance(pid, int) or not isinstance(address, str) or not is_held(uri):
        return None
    owner = holder(uri)
    if owner is not None and owner != pid:
        return None  # the note of a process that has since let the file go
    if owner is None and not _alive(pid):
        return None
    return address


def _read(note: Path) -> dict[str, object]:
    try:
        data = json.loads(note.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
