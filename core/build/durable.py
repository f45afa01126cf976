"""Durable build jobs (docs/architecture.md §4): who is building a knowledge base, and what a resume reruns.

A job's row in the catalog records its paths (absolute), its upload staging folder, the process
that runs it and its status. A row that says `running` or `paused` while its process is gone
belongs to a build that was killed: it is `interrupted`, and `BuildPipeline.resume_interrupted`
reruns its paths. Within one process a per-knowledge-base lock refuses a second build at once;
across processes the job row does (a running job of a live process).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..choices import JobState
from ..errors import BuildBusyError
from ..models import KnowledgeBase

__all__ = [
    "BuildBusyError",
    "JobRecord",
    "ProcessId",
    "build_lock",
    "process_alive",
    "remove_staging",
    "staging_of",
    "this_process",
]

# The final states (`JobState.active` says which are at work); `interrupted`, which `resume`
# picks up, is neither.
_ENDED = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class ProcessId:
    """A process, told apart from a later one that reuses its pid by its start time."""

    pid: int
    started: str  # /proc/<pid>/stat start time in clock ticks; "" where unknown


@dataclass(frozen=True)
class JobRecord:
    id: int
    kb_id: int
    status: str
    paths: tuple[str, ...]
    staging: str
    pid: int
    started: str
    total: int
    done: int
    message: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> JobRecord:
        return cls(
            id=row["id"],
            kb_id=row["kb_id"],
            status=row["status"],
            paths=tuple(json.loads(row.get("paths") or "[]")),
            staging=row.get("staging") or "",
            pid=int(row.get("pid") or 0),
            started=row.get("pid_started") or "",
            total=int(row.get("total") or 0),
            done=int(row.get("done") or 0),
            message=row.get("message") or "",
        )


def _start_time(pid: int) -> str | None:
    """The start time of a live process, "" where /proc is absent, None for a dead or zombie one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = stat.rsplit(")", 1)[-1].split()
    if not fields or fields[0] in ("Z", "X"):  # a zombie has finished: it builds nothing
        return None
    return fields[19] if len(fields) > 19 else ""


def this_process() -> ProcessId:
    return ProcessId(os.getpid(), _start_time(os.getpid()) or "")


def process_alive(pid: int, started: str) -> bool:
    """Whether the process that wrote a job row is still running."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    now = _start_time(pid)
    if now is None:
        return False
    return not (started and now and started != now)


_LOCKS: dict[tuple[str, int], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextmanager
def build_lock(catalog_path: Path, kb: KnowledgeBase) -> Iterator[None]:
    """Hold the knowledge base's build lock of this process, or refuse at once."""
    key = (str(Path(catalog_path).resolve()), kb.id)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    if not lock.acquire(blocking=False):
        raise BuildBusyError(
            f"The knowledge base {kb.name!r} is already being built; wait for that build to"
            " finish (or cancel it), then try again."
        )
    try:
        yield
    finally:
        lock.release()


def staging_of(home: Path, paths: Sequence[Path]) -> Path | None:
    """The upload staging folder (`<home>/uploads/<job>/`) these paths were saved in, if any.

    The app stages uploads there; the folder belongs to the job and goes when the job ends.
    """
    root = (Path(home) / "uploads").resolve()
    found: set[Path] = set()
    for path in paths:
        try:
            rel = Path(path).resolve().relative_to(root)
        except ValueError:
            continue
        if len(rel.parts) > 1:
            found.add(root / rel.parts[0])
    return found.pop() if len(found) == 1 else None


def remove_staging(staging: str, status: str) -> None:
    """Remove a job's staged uploads once it has ended for good (not when it may resume)."""
    if staging and status in _ENDED:
        shutil.rmtree(staging, ignore_errors=True)
