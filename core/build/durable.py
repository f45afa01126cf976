"""Durable build jobs (docs/architecture.md §4): who is building a knowledge base, and what a resume reruns.

A job's row in the catalog records its paths (absolute), its upload staging folder, the process
that runs it (pid, start time, host) and its status; while it runs, a heartbeat (`Heartbeat`)
writes its progress into the row every `BEAT_S` and stops it when another process asked
(`JobStore.request_cancel`). A row that says `running` or `paused` while its process is gone
belongs to a build that was killed: it is `interrupted`, and `BuildPipeline.resume_interrupted`
reruns its paths. Gone means, on this host, that the pid no longer runs (`process_alive`); on
another host sharing the catalog, that its heartbeat is older than `STALE_S` (`owner_alive`).
Within one process a per-knowledge-base lock refuses a second build at once; across processes
the job row does (a running job of a live process).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..choices import JobState
from ..errors import BuildBusyError, ZhixingError
from ..models import KnowledgeBase
from ..store.jobs import JobStore

__all__ = [
    "BEAT_S",
    "STALE_S",
    "BuildBusyError",
    "Heartbeat",
    "JobRecord",
    "ProcessId",
    "build_lock",
    "keep_uploads",
    "local_paths",
    "owner_alive",
    "process_alive",
    "remove_staging",
    "resumable_here",
    "staging_of",
    "this_process",
]

log = logging.getLogger(__name__)

BEAT_S = 2.0  # how often a running job writes its progress and reads a cancel asked elsewhere
# A job of another host whose heartbeat is older than this is taken for dead (its machine went
# down or lost the catalog). Long beside BEAT_S, for slow writes and clocks a little apart.
STALE_S = 60.0

# The final states (`JobState.active` says which are at work); `interrupted`, which `resume`
# picks up, is neither.
_ENDED = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class ProcessId:
    """A process, told apart from a later one that reuses its pid by its start time."""

    pid: int
    started: str  # /proc/<pid>/stat start time in clock ticks; "" where unknown
    host: str = ""  # the machine's name: a pid means something only on its own host

    @property
    def owner(self) -> tuple[int, str, str]:
        """As a job row records it (`JobStore.claim`)."""
        return (self.pid, self.started, self.host)


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
    host: str = ""

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
            host=row.get("host") or "",
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


def this_host() -> str:
    return socket.gethostname()


def this_process() -> ProcessId:
    return ProcessId(os.getpid(), _start_time(os.getpid()) or "", this_host())


def owner_alive(row: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the process a job row names still runs it: by its pid on this host (a row
    without a host is this host's, from before hosts were recorded), by its heartbeat on
    another."""
    host = str(row.get("host") or "")
    if host and host != this_host():
        beat = row.get("heartbeat") or 0
        return (time.time() if now is None else now) - float(beat) < STALE_S
    return process_alive(int(row.get("pid") or 0), str(row.get("pid_started") or ""))


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
    """Hold the knowledge base's build lock of this process, or refuse at once (`catalog_path`
    names the catalog: a file, or a server's redacted URI)."""
    path = Path(catalog_path)
    key = (str(path.resolve() if path.exists() else path), kb.id)
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


def remove_staging(staging: str, status: str, jobs: JobStore | None = None) -> None:
    """Remove a job's staged uploads once it has ended for good (not when it may resume), and
    the catalog's copy of them (`keep_uploads`)."""
    if staging and status in _ENDED:
        shutil.rmtree(staging, ignore_errors=True)
        if jobs is not None:
            jobs.drop_staged(Path(staging).name)


def keep_uploads(jobs: JobStore, staging: str) -> None:
    """Copy a job's staged uploads into a shared catalog, so that a machine without this home's
    folder can resume the job (`local_paths`)."""
    folder = Path(staging)
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
    jobs.keep_staged(
        folder.name, [(p.relative_to(folder).as_posix(), p.read_bytes()) for p in files]
    )


def local_paths(jobs: JobStore, job: JobRecord, home: Path) -> JobRecord:
    """The job with paths this machine can read: where its staging folder is missing here (the
    job was started on another machine), the uploads the catalog kept (`keep_uploads`) are
    written under this home's `uploads/` and its paths moved there."""
    if not job.staging or Path(job.staging).is_dir():
        return job
    folder = Path(job.staging)
    kept = jobs.staged(folder.name)
    if not kept:
        where = f" on {job.host}" if job.host and job.host != this_host() else ""
        raise ZhixingError(
            f"The files of build job {job.id} were uploaded{where} to {folder}, which this"
            " machine does not have, and the catalog kept no copy; resume it where it started."
        )
    here = (Path(home) / "uploads" / Path(folder.name).name).resolve()
    for name, content in kept:
        target = (here / name).resolve()
        if here not in target.parents:  # a name that climbs out of the folder: never written
            raise ZhixingError(f"Build job {job.id} names an upload outside its folder: {name!r}.")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    moved = []
    for path in job.paths:
        try:
            moved.append(str(here / Path(path).relative_to(folder)))
        except ValueError:  # a path of its own beside the uploads: the same on every machine
            moved.append(path)
    return replace(job, paths=tuple(moved), staging=str(here))


def resumable_here(jobs: JobStore, job: JobRecord) -> bool:
    """Whether this machine can read a job's files: its own, or the catalog's copy of them."""
    if any(Path(p).exists() for p in job.paths):
        return True
    return bool(job.staging) and bool(jobs.staged(Path(job.staging).name))


class Heartbeat:
    """While a job runs: every `BEAT_S` write its latest progress (`progress()` gives the
    keywords of `JobStore.beat`) and the time into its row, and set `cancel` when another
    process asked the job to stop. A failed write is tried again at the next beat: the build
    never stops for its heartbeat."""

    def __init__(
        self,
        beat: Callable[..., bool],
        progress: Callable[[], Mapping[str, object]],
        cancel: threading.Event,
        every_s: float = BEAT_S,
    ) -> None:
        self._beat, self._progress, self._cancel, self._every = beat, progress, cancel, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zhixing-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                if self._beat(**self._progress()):
                    self._cancel.set()
            except Exception:  # the catalog away for a moment: the next beat tries again
                log.debug("a build's heartbeat failed", exc_info=True)
