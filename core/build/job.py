"""A background build job (core/build/background.py): the live record only its own thread
writes, under the registry's lock, and the immutable `JobView` snapshot a page reads."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..choices import JobState
from .events import BuildReport

__all__ = ["Job", "JobView", "LogLine"]


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
