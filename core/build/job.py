"""A background build job (core/build/background.py): the live record only its own thread
writes, under the registry's lock, and the immutable `JobView` snapshot a page reads — of a job
of this process, or of one another process runs on the same catalog, read from its row
(`JobView.from_row`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..choices import JobState
from .durable import JobRecord, owner_alive
from .events import BuildReport

__all__ = ["ELSEWHERE", "Job", "JobView", "LogLine"]

ELSEWHERE = "db-"  # how the id of a job another process runs begins: its row's id follows


@dataclass(frozen=True)
class LogLine:
    """One line of a job's log: a pipeline stage (with the event's `step` of `steps`) or one of
    the job's own (`JOB_STAGES`; "staged" counts its files in `steps`, "failed" says why in
    `message`)."""

    at: float  # time.time()
    stage: str
    message: str
    step: int = 0
    steps: int = 0


@dataclass(frozen=True)
class JobView:
    """What a page may read about a job: a snapshot, never the live object."""

    id: str
    kb: str
    files: tuple[str, ...]
    state: JobState
    done: int
    total: int
    chunks: int  # indexed: their vectors written
    eta_s: float | None
    log: tuple[LogLine, ...]
    report: BuildReport | None
    error: str
    started_at: float
    finished_at: float | None
    cancel_requested: bool
    stage: str = ""  # the pipeline's latest stage (core.build.events.STAGES)
    step: int = 0  # of `steps`: that stage's own work (texts embedded of a batch's, …)
    steps: int = 0
    progress: float = 0.0  # the build's ProgressEvent.fraction
    embedded: int = 0  # chunks embedded so far
    queued: int = 0  # chunks of the documents read so far
    elsewhere: str = ""  # who runs it when another process does: "host · pid N"; else ""

    @classmethod
    def from_row(cls, row: Mapping[str, Any], kb: str) -> JobView:
        """A job of another process (another app instance, a command) as its row says: state,
        counts, stage and progress as of its last heartbeat; `interrupted` when its process
        has gone though the row still says running. Its log stays with that process."""
        record = JobRecord.from_row(dict(row))
        state = JobState(row["status"])
        if state.active and not owner_alive(row):
            state = JobState.INTERRUPTED
        return cls(
            id=f"{ELSEWHERE}{record.id}",
            kb=kb,
            files=tuple(Path(p).name for p in record.paths),
            state=state,
            done=record.done,
            total=record.total,
            chunks=int(row.get("chunks") or 0),
            eta_s=None,
            log=(),
            report=None,
            error=record.message,
            started_at=float(row.get("created_at") or 0),
            finished_at=row.get("finished_at"),
            cancel_requested=bool(row.get("cancel_requested")),
            stage=str(row.get("stage") or ""),
            progress=float(row.get("progress") or 0),
            embedded=int(row.get("embedded") or 0),
            queued=int(row.get("queued") or 0),
            elsewhere=f"{record.host or '?'} · pid {record.pid}",
        )

    @property
    def running(self) -> bool:
        """Still at work (running, or paused waiting for the LLM endpoint)."""
        return self.state.active

    @property
    def fraction(self) -> float:
        """How far the build is, 0..1: through the embedding too, not only the documents read."""
        if not self.running:
            return 1.0
        return min(max(self.progress, 0.0), 1.0)


@dataclass
class Job:
    id: str
    kb: str
    files: tuple[str, ...]
    staging: Path | None
    cancel: threading.Event = field(default_factory=threading.Event)
    state: JobState = JobState.RUNNING
    done: int = 0
    total: int = 0
    chunks: int = 0
    eta_s: float | None = None
    stage: str = ""
    step: int = 0
    steps: int = 0
    progress: float = 0.0
    embedded: int = 0
    queued: int = 0
    log: list[LogLine] = field(default_factory=list)
    report: BuildReport | None = None
    error: str = ""
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    thread: threading.Thread | None = None

    def view(self) -> JobView:
        """A snapshot: every field a view has, as the job holds it now."""
        held = {f.name: getattr(self, f.name) for f in fields(JobView) if hasattr(self, f.name)}
        return JobView(**{**held, "log": tuple(self.log)}, cancel_requested=self.cancel.is_set())
