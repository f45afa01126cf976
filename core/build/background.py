"""Background build jobs: one `Builds.add` (core/service/builds.py) per job, in a daemon thread.

One registry per server process (the app makes it once and hands it to every service it opens),
so a job keeps running while its user moves to another page, is still listed after a browser
reload, and outlives a reopened service. Pages never hold the registry: they read jobs through
the service (`service.builds.jobs()`, which shows only jobs of knowledge bases the user may
see) as immutable `JobView` snapshots; only the job's own thread writes to a job, under the
registry's lock. `when_idle` runs a callback once no build is running (the settings page uses
it to reopen the shared service with new settings without closing it under a running build).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..choices import JobState
from ..config import Settings
from ..errors import BuildBusyError, ZhixingError, internal_error
from .events import BuildReport, ProgressEvent, ProgressSink
from .job import Job, JobView, LogLine
from .staging import stage_uploads

if TYPE_CHECKING:
    from .durable import JobRecord

__all__ = ["JOB_STAGES", "Builder", "BuildJobs"]

log = logging.getLogger(__name__)


class Builder(Protocol):
    """What a job runs its build through: the service's builds for one user
    (core/service/builds.py), which check that user's rights on every call."""

    @property
    def settings(self) -> Settings: ...

    def kb(self, name: str) -> object:
        """Raise NotFoundError unless the user may see the knowledge base `name`."""
        ...

    # Compact by hand: the methods' full layout and docstrings stand once, on the service.
    # fmt: off
    def add(self, name: str, paths: Sequence[Path], on_event: ProgressSink | None = None,
            cancel: threading.Event | None = None) -> BuildReport: ...

    def interrupted(self) -> list[tuple[JobRecord, str]]: ...

    def resume_interrupted(self, name: str | None = None, *, job_id: int | None = None,
                           on_event: ProgressSink | None = None,
                           cancel: threading.Event | None = None,
                           cancelled: bool = False) -> list[BuildReport]: ...
    # fmt: on


# The job's own log lines, besides the pipeline's stages (core.build.events.STAGES): their
# stage names, and English messages for the debug log; a page words them from the stage.
JOB_STAGES = ("staged", "resuming", "continuing", "finished", "cancelled", "failed")
LOG_STAGED = "received {count} file(s)"
LOG_RESUMING = "resuming a build the server's restart interrupted"
LOG_CONTINUING = "building the documents a cancel left"
LOG_FINISHED = "build finished"
LOG_CANCELLED = "cancelled"
BUSY = "知识库「{kb}」正在构建中，请等它完成或先取消，再操作。"
NOTHING_TO_BUILD = "没有要构建的文件。"
NOTHING_TO_RESUME = "这个构建任务没有剩下要继续构建的文档。"

RUNNING, DONE, FAILED, CANCELLED = (
    JobState.RUNNING,
    JobState.DONE,
    JobState.FAILED,
    JobState.CANCELLED,
)
PAUSED = JobState.PAUSED  # the LLM endpoint is away; the job waits for it (core.build.pause)
_MAX_LOG = 5000  # a corpus of many documents logs one line per throttled event; cap the memory
_MAX_FINISHED = 50  # finished jobs kept for their summaries


class BuildJobs:
    """The build jobs of one server process, newest first; at most one running per knowledge
    base."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._idle_callbacks: list[Callable[[], None]] = []

    def start(
        self,
        builder: Builder,
        kb: str,
        uploads: Sequence[tuple[str, bytes]] = (),
        paths: Sequence[Path] = (),
    ) -> JobView:
        """Start adding `uploads` (name, content) and `paths` to knowledge base `kb`.

        Uploads are saved under `<home>/uploads/<job id>/` by their sanitized names (a document
        is named by its file name) and removed when the build ends.
        """
        builder.kb(kb)  # a readable NotFoundError before anything is staged
        if not uploads and not paths:
            raise ZhixingError(NOTHING_TO_BUILD)
        self.check_idle(kb)
        job_id = uuid.uuid4().hex[:12]
        # Staging writes files: do it outside the lock, then check again before registering.
        staging = builder.settings.home / "uploads" / job_id if uploads else None
        limit = builder.settings.max_upload_mb
        staged = stage_uploads(staging, uploads, max_upload_mb=limit) if staging else []
        all_paths = [*staged, *(Path(p) for p in paths)]
        job = Job(id=job_id, kb=kb, files=tuple(p.name for p in all_paths), staging=staging)
        self._log(job, "staged", LOG_STAGED.format(count=len(all_paths)), steps=len(all_paths))

        def build(on_event: ProgressSink, cancel: threading.Event) -> BuildReport:
            return builder.add(kb, all_paths, on_event=on_event, cancel=cancel)

        job.thread = threading.Thread(
            target=self._run, args=(job, build), name=f"zhixing-build-{job_id}", daemon=True
        )
        with self._lock:
            try:
                self._check_idle(kb)
            except BuildBusyError:
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
                raise
            self._jobs = {job_id: job, **self._jobs}
            self._trim()
            job.thread.start()
            return job.view()

    def resume_interrupted(self, builder: Builder) -> list[JobView]:
        """Restart, as background jobs, the builds a crash or kill of the server interrupted.

        Call once per server process. Their uploads are still staged under
        `<home>/uploads/<job id>/` (or kept in a shared catalog): that folder goes only when a
        job ends for good.
        """
        started = []
        for record, kb in builder.interrupted():
            files = tuple(Path(p).name for p in record.paths)
            view = self._resume(builder, record.id, kb, files, record.staging, refuse=False)
            if view is not None:
                started.append(view)
        return started

    def take_over(self, builder: Builder, record_id: int, kb: str, files: Sequence[str]) -> JobView:
        """Resume, as a background job of this process, one build whose process died (another
        app instance's, a command's): what it had not indexed is built here."""
        view = self._resume(builder, record_id, kb, tuple(files), "", refuse=True)
        assert view is not None  # `refuse` raises instead
        return view

    def _resume(
        self,
        builder: Builder,
        record_id: int,
        kb: str,
        files: tuple[str, ...],
        staging_path: str,
        *,
        refuse: bool,
    ) -> JobView | None:
        staging = Path(staging_path) if staging_path else None
        job = Job(
            id=staging.name if staging else f"job-{record_id}",
            kb=kb,
            files=files,
            staging=staging,
        )
        self._log(job, "resuming", LOG_RESUMING)

        def build(on_event: ProgressSink, cancel: threading.Event) -> BuildReport | None:
            reports = builder.resume_interrupted(job_id=record_id, on_event=on_event, cancel=cancel)
            return reports[0] if reports else None

        job.thread = threading.Thread(
            target=self._run, args=(job, build), name=f"zhixing-build-{job.id}", daemon=True
        )
        with self._lock:
            if self._running(kb) is not None or job.id in self._jobs:
                if refuse:
                    raise BuildBusyError(BUSY.format(kb=kb))
                return None
            self._jobs = {job.id: job, **self._jobs}
            job.thread.start()
            return job.view()

    def get(self, job_id: str) -> JobView | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return job.view() if job else None

    def list(self, kb: str | None = None) -> list[JobView]:
        """Every job (newest first), or only those of one knowledge base."""
        with self._lock:
            return [j.view() for j in self._jobs.values() if kb is None or j.kb == kb]

    def running(self, kb: str) -> JobView | None:
        with self._lock:
            job = self._running(kb)
            return job.view() if job else None

    def when_idle(self, callback: Callable[[], None]) -> bool:
        """Run `callback` as soon as no build is running; return whether it ran now.

        When builds are running it runs in the thread of the last one to end, after that job's
        final state is set. It runs under the registry's lock, so no build starts while it runs:
        it must not call this registry. An exception it raises is logged, never raised here.
        """
        with self._lock:
            if self._any_active():
                self._idle_callbacks.append(callback)
                return False
            _call(callback)
            return True

    def check_idle(self, kb: str) -> None:
        """Raise BuildBusyError when `kb` has a build running (before removing or deleting)."""
        with self._lock:
            self._check_idle(kb)

    def cancel(self, job_id: str) -> None:
        """Ask a job to stop within seconds, whatever stage it is in: what is indexed stays,
        the rest `resume` can build (core/build/pipeline.py)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            job.cancel.set()

    def forget(self, job_id: str) -> None:
        """Drop a finished job from the list (a running one stays). A cancelled job's staged
        uploads go with it: what it left is given up, what it indexed stays."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and not job.state.active:
                del self._jobs[job_id]
            else:
                job = None
        if job is not None and job.staging is not None:
            shutil.rmtree(job.staging, ignore_errors=True)

    def resume(self, builder: Builder, job_id: str) -> JobView:
        """Build, as a new background job in its place, what a cancelled job left."""
        with self._lock:
            old = self._jobs.get(job_id)
        report = old.report if old is not None else None
        if old is None or old.state != CANCELLED or report is None or not report.left:
            raise ZhixingError(NOTHING_TO_RESUME)
        job = Job(id=uuid.uuid4().hex[:12], kb=old.kb, files=old.files, staging=old.staging)
        self._log(job, "continuing", LOG_CONTINUING, steps=report.left)

        def build(on_event: ProgressSink, cancel: threading.Event) -> BuildReport | None:
            reports = builder.resume_interrupted(
                job_id=report.job, on_event=on_event, cancel=cancel, cancelled=True
            )
            return reports[0] if reports else None

        job.thread = threading.Thread(
            target=self._run, args=(job, build), name=f"zhixing-build-{job.id}", daemon=True
        )
        with self._lock:
            if job_id not in self._jobs:  # resumed (or dismissed) meanwhile
                raise ZhixingError(NOTHING_TO_RESUME)
            self._check_idle(old.kb)
            del self._jobs[job_id]
            self._jobs = {job.id: job, **self._jobs}
            job.thread.start()
            return job.view()

    def wait(self, job_id: str, timeout: float | None = None) -> JobView:
        """Block until the job ends (or `timeout` seconds pass); return its latest view."""
        with self._lock:
            job = self._jobs[job_id]
        if job.thread is not None:
            job.thread.join(timeout)
        with self._lock:
            return job.view()

    def wait_all(self, timeout: float | None = None) -> None:
        """Wait for every running job: call before closing the service they use."""
        with self._lock:
            threads = [j.thread for j in self._jobs.values() if j.thread is not None]
        for thread in threads:
            thread.join(timeout)

    # --- the job's thread ----------------------------------------------------------------------

    def _run(self, job: Job, build: Callable[[ProgressSink, threading.Event], Any]) -> None:
        def on_event(event: ProgressEvent) -> None:
            with self._lock:
                job.done, job.total = event.done, event.total
                job.chunks, job.eta_s = event.chunks, event.eta_s
                job.stage, job.step, job.steps = event.stage, event.step, event.steps
                job.progress = event.fraction
                job.embedded, job.queued = event.embedded, event.queued
                if event.stage == PAUSED:
                    job.state = PAUSED
                elif job.state == PAUSED:
                    job.state = RUNNING
                self._log(job, event.stage, event.message, event.step, event.steps)

        report: BuildReport | None = None
        error = ""
        try:
            report = build(on_event, job.cancel)
        except ZhixingError as exc:
            error = str(exc)
        except Exception as exc:  # a bug must end the job readably, not kill it silently
            log.error("build job %s of %s failed", job.id, job.kb, exc_info=True)
            error = str(internal_error(exc, f"building {job.kb!r}"))
        finally:
            # A build that stopped (endpoint away too long), or was cancelled with documents
            # left, is resumable: keep its uploads. Otherwise the pipeline has removed them
            # already; this covers a refused start.
            resumable = report is not None and (report.stopped or report.left > 0)
            if job.staging is not None and not resumable:
                shutil.rmtree(job.staging, ignore_errors=True)
        with self._lock:
            job.report, job.finished_at = report, time.time()
            if report is None or report.stopped:
                job.state, job.error = FAILED, error or (report.stopped if report else "")
                self._log(job, "failed", job.error)
            elif report.cancelled:
                # (A cancel that came after the last batch was written changed nothing: done.)
                job.state = CANCELLED
                self._log(job, "cancelled", LOG_CANCELLED, report.indexed, report.left)
            else:
                job.state = DONE
                self._log(job, "finished", LOG_FINISHED)
            if not self._any_active():
                callbacks, self._idle_callbacks = self._idle_callbacks, []
                for callback in callbacks:
                    _call(callback)

    # --- under the lock -----------------------------------------------------------------------

    def _log(self, job: Job, stage: str, message: str, step: int = 0, steps: int = 0) -> None:
        job.log.append(LogLine(time.time(), stage, message, step, steps))
        if len(job.log) > _MAX_LOG:
            del job.log[: len(job.log) - _MAX_LOG]

    def _any_active(self) -> bool:
        return any(j.state.active for j in self._jobs.values())

    def _running(self, kb: str) -> Job | None:
        return next((j for j in self._jobs.values() if j.kb == kb and j.state.active), None)

    def _check_idle(self, kb: str) -> None:
        if self._running(kb) is not None:
            raise BuildBusyError(BUSY.format(kb=kb))

    def _trim(self) -> None:
        finished = [i for i, j in self._jobs.items() if not j.state.active]
        for job_id in finished[_MAX_FINISHED:]:
            del self._jobs[job_id]


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # an idle callback must not break the job that ran it, nor the page
        log.exception("A callback waiting for the builds to end failed.")
