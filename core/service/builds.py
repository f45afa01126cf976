"""Builds: adding and removing documents, in the foreground or as background jobs, with what
a build will cost before it runs (core/build/estimate.py) and the resume of interrupted ones."""

from __future__ import annotations

import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..build import BuildReport, ProgressSink, remove_documents
from ..build.background import BUSY
from ..build.durable import this_process
from ..build.estimate import BuildEstimate, worth_estimating
from ..build.job import ELSEWHERE, JobView
from ..build.staging import stage_uploads
from ..choices import BuildMode, DocumentState, JobState
from ..config import Settings
from ..errors import BuildBusyError, NotFoundError, ZhixingError
from ..home import private_dir
from ..ingest import sanitize_name
from ..ingest.uploads import Refusal, UploadRefusedError, screen_uploads
from ..models import KnowledgeBase, StoredDocument
from .access import Access

if TYPE_CHECKING:
    from ..build.durable import JobRecord

__all__ = ["Builds"]


class Builds:
    """Every method needs the build role (an editor's) on a knowledge base the actor sees."""

    def __init__(self, access: Access) -> None:
        self._access, self._home = access, access.home

    @property
    def settings(self) -> Settings:
        return self._home.settings

    def kb(self, name: str) -> KnowledgeBase:
        """The knowledge base `name` if the actor may see it (what a job checks first)."""
        return self._access.kb(name)

    # --- in the foreground ------------------------------------------------------------------

    def add(
        self,
        name: str,
        paths: Sequence[Path],
        on_event: ProgressSink | None = None,
        cancel: threading.Event | None = None,
    ) -> BuildReport:
        access = self._access
        access.require("build", "add documents")
        kb = access.kb(name)
        access.check_embedder(kb)
        files = [Path(p).name for p in paths]
        try:
            report = self._home.pipeline.add(kb, [Path(p) for p in paths], on_event, cancel)
        except ZhixingError as exc:
            access.audit("documents.add", kb.name, files=files, error=str(exc))
            raise
        access.audit(
            "documents.add",
            kb.name,
            files=files,
            added=len(report.added),
            replaced=len(report.replaced),
            failed=len(report.failed),
        )
        return report

    def remove(self, name: str, document: str) -> StoredDocument:
        """Remove one document and every trace of it (chunks, vectors)."""
        access, catalog = self._access, self._home.catalog
        access.require("build", "remove documents")
        kb = access.kb(name)
        doc = catalog.find_document(kb.id, document)
        if doc is None:
            known = [d.source for d in catalog.list_documents(kb.id)]
            hint = (
                f" Documents: {', '.join(known[:10])}{' …' if len(known) > 10 else ''}."
                if known
                else ""
            )
            raise NotFoundError(f"{name!r} has no document named {document!r}.{hint}")
        home = self._home
        remove_documents(
            catalog, home.vectors, kb, [doc.id], graph=home.graph, embedder=home.embedder
        )
        access.audit("documents.remove", kb.name, document=doc.source)
        return doc

    def resume_interrupted(
        self,
        name: str | None = None,
        *,
        job_id: int | None = None,
        on_event: ProgressSink | None = None,
        cancel: threading.Event | None = None,
        cancelled: bool = False,
    ) -> list[BuildReport]:
        """Finish the builds a kill or a lost LLM endpoint interrupted (of `name`, or all);
        with `cancelled`, also what cancelled builds left."""
        access = self._access
        access.require("build", "add documents")
        kb = access.kb(name) if name is not None else None
        reports = self._home.pipeline.resume_interrupted(
            kb, job_id=job_id, on_event=on_event, cancel=cancel, cancelled=cancelled
        )
        for report in reports:
            access.audit(
                "documents.resume",
                report.kb,
                added=len(report.added),
                skipped=len(report.skipped),
                failed=len(report.failed),
            )
        return reports

    def interrupted(self) -> list[tuple[JobRecord, str]]:
        """The interrupted builds' job records with their knowledge bases' names."""
        self._access.require("build", "add documents")
        catalog = self._home.catalog
        return [
            (record, catalog.kb_by_id(record.kb_id).name)
            for record in self._home.pipeline.interrupted_jobs()
        ]

    # --- what it will cost ------------------------------------------------------------------

    def worth_estimating(self) -> bool:
        """Whether a build has a cost to show before it runs: LLM calls, or a slow embedder."""
        return worth_estimating(self._home.pipeline)

    def estimate(self, name: str, paths: Sequence[Path]) -> BuildEstimate | None:
        """The cost of adding these paths (core/build/estimate.py): chunks and embedding time,
        and with an LLM its calls, cached, tokens and model; None when not `worth_estimating`."""
        self._access.require("build", "add documents")
        return self._home.pipeline.estimate(self._access.kb(name), [Path(p) for p in paths])

    def estimate_new(self, mode: str, paths: Sequence[Path]) -> BuildEstimate | None:
        """The LLM and embedding cost of building paths into a knowledge base not created yet
        (no documents, so nothing counts as already built)."""
        self._access.require("build", "add documents")
        kb = KnowledgeBase(id=-1, name="new", mode=BuildMode.parse(mode))
        return self._home.pipeline.estimate(kb, paths)

    def estimate_uploads(
        self, uploads: Sequence[tuple[str, bytes]], modes: Sequence[str]
    ) -> dict[str, BuildEstimate | None] | None:
        """The LLM and embedding cost of building uploads into a new knowledge base in each mode
        (None when there is nothing worth estimating). Parses and chunks the files (a dry
        pass), so call it on demand, not on every rerun."""
        self._access.require("build", "add documents")
        if not uploads or not self.worth_estimating():
            return None
        settings = self._home.settings
        folder = private_dir(settings.home / "uploads") / f"estimate-{uuid.uuid4().hex[:12]}"
        try:
            paths = stage_uploads(folder, uploads, max_upload_mb=settings.max_upload_mb)
            return {mode: self.estimate_new(mode, paths) for mode in modes}
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # --- in the background ------------------------------------------------------------------

    def start(
        self, name: str, uploads: Sequence[tuple[str, bytes]] = (), paths: Sequence[Path] = ()
    ) -> JobView:
        """Add uploads (name, content) and paths to a knowledge base in the background; the
        uploads are staged under server-made names (core/build/background.py).

        An upload refused for its size or type is not staged, and blocks nothing: it is listed
        among the knowledge base's documents as failed, with its sentence, while the others
        build (UploadRefusedError only when nothing is left to build)."""
        self._access.require("build", "add documents")
        kb = self._access.kb(name)
        uploads, refused = screen_uploads(uploads, max_mb=self._home.settings.max_upload_mb)
        if refused:
            self._home.jobs.check_idle(kb.name)
            self._record_refused(kb, refused, staged={sanitize_name(n) for n, _ in uploads})
            if not uploads and not paths:
                raise UploadRefusedError(" ".join(r.error for r in refused))
        if uploads:  # staged in a folder of it: owner-only whatever the umask
            private_dir(self._home.settings.home / "uploads")
        return self._home.jobs.start(self, name, uploads, paths)

    def _record_refused(
        self, kb: KnowledgeBase, refused: Sequence[Refusal], staged: set[str]
    ) -> None:
        """List refused uploads as failed documents; an indexed version of one stays as it is."""
        catalog = self._home.catalog
        for item in refused:
            known = catalog.find_document(kb.id, item.source)
            if item.source in staged or (
                known is not None and known.status == DocumentState.INDEXED
            ):
                continue
            catalog.record_failure(
                kb.id, source=item.source, sha256=item.sha256, kind="", error=item.error
            )
        self._access.audit(
            "documents.refuse",
            kb.name,
            files=[r.source for r in refused],
            errors=[r.error for r in refused],
        )

    def jobs(self) -> list[JobView]:
        """The builds of the knowledge bases the actor may see: this process's background jobs,
        newest first, then the unfinished builds of other processes on the catalog (another
        app instance, a command), as their rows say (`JobView.from_row`)."""
        visible = self._access.visible_names()
        here = [job for job in self._home.jobs.list() if job.kb in visible]
        return here + [job for job in self._elsewhere() if job.kb in visible]

    def job(self, job_id: str) -> JobView | None:
        """One visible job, or None (a job of a hidden knowledge base reads as no job)."""
        if job_id.startswith(ELSEWHERE):
            job = next((j for j in self._elsewhere() if j.id == job_id), None)
        else:
            job = self._home.jobs.get(job_id)
        return job if job is not None and job.kb in self._access.visible_names() else None

    def running(self, name: str) -> JobView | None:
        """The build at work on a knowledge base, in this process or another."""
        kb = self._access.kb(name).name
        here = self._home.jobs.running(kb)
        return here or next((j for j in self._elsewhere() if j.kb == kb and j.running), None)

    def cancel(self, job_id: str) -> None:
        """Ask a build to stop within seconds, keeping what it indexed (an editor's right on
        that base); audited with the job's id. A build of another process is asked through its
        row: it stops at its next heartbeat (core/build/durable.py)."""
        job = self._own_job(job_id, "cancel builds")
        if job.elsewhere:
            self._home.catalog.jobs.request_cancel(_row_id(job.id))
        else:
            self._home.jobs.cancel(job.id)
        self._access.audit("build.cancel", job.kb, job=job.id, files=len(job.files))

    def resume(self, job_id: str) -> JobView:
        """Build what a cancelled build left, in the background, in its place; or take over,
        in this process, a build whose process died (another instance's, a command's)."""
        job = self._own_job(job_id, "add documents")
        if job.elsewhere:
            if job.state != JobState.INTERRUPTED:
                raise BuildBusyError(BUSY.format(kb=job.kb))
            return self._home.jobs.take_over(self, _row_id(job.id), job.kb, job.files)
        return self._home.jobs.resume(self, job.id)

    def _elsewhere(self) -> list[JobView]:
        """The unfinished builds other processes run (or ran, till they died) on the catalog."""
        catalog, me = self._home.catalog, this_process()
        names = {kb.id: kb.name for kb in catalog.list_kbs()}
        return [
            JobView.from_row(row, names[row["kb_id"]])
            for row in reversed(catalog.jobs.unfinished())
            if row["kb_id"] in names and (row["pid"], row["host"] or me.host) != (me.pid, me.host)
        ]

    def dismiss(self, job_id: str) -> None:
        """Drop a finished build from the list."""
        self._home.jobs.forget(self._own_job(job_id, "dismiss builds").id)

    def check_idle(self, name: str) -> None:
        """Raise BuildBusyError when the knowledge base has a build running, here or in another
        process on the catalog."""
        kb = self._access.kb(name).name
        self._home.jobs.check_idle(kb)
        if any(j.kb == kb and j.running for j in self._elsewhere()):
            raise BuildBusyError(BUSY.format(kb=kb))

    def resume_all(self) -> list[JobView]:
        """Restart, in the background, the builds a kill of the server interrupted."""
        self._access.require("build", "add documents")
        return self._home.jobs.resume_interrupted(self)

    def when_idle(self, callback: Callable[[], None]) -> bool:
        """Run `callback` once no build runs (now, or when the last one ends)."""
        return self._home.jobs.when_idle(callback)

    def _own_job(self, job_id: str, what: str) -> JobView:
        job = self.job(job_id)
        if job is None:
            raise NotFoundError("There is no such build job; it may have been dismissed.")
        self._access.require("build", what)
        return job


def _row_id(job_id: str) -> int:
    return int(job_id.removeprefix(ELSEWHERE))
