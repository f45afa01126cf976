"""One build run (`BuildPipeline.add`, a resume): the job it claims and finishes, the documents
it reads into the catalog, and what a cancel rolls back.

A document's chunks are written to the catalog first (`chunked`); the batches that enrich, embed
and write them are core/build/batches.py, which marks a document `indexed` once all its chunks
have vectors. A cancel removes the documents it left half-built, so a knowledge base holds only
whole documents, and keeps the rest of the job's files for a resume.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..choices import DocumentState, JobState
from ..errors import (
    LLMError,
    ParseError,
    StoreError,
    internal_error,
)
from ..ingest import chunk_document
from ..ingest.pdf import ParseCancelled, cancelling, reporting_ocr
from ..ingest.pdf_streams import OcrProgress
from ..llm.protocol import CallsCancelled
from ..models import KnowledgeBase, KnownDocument, ParsedDocument
from .batches import Batches
from .durable import (
    BuildBusyError,
    Heartbeat,
    JobRecord,
    build_lock,
    keep_uploads,
    owner_alive,
    remove_staging,
    staging_of,
    this_process,
)
from .events import BuildReport, ItemFailure, Progress, ProgressSink
from .pause import BuildCancelled, PauseGuard
from .remove import remove_documents
from .sources import Unit, collect_files, count_units, iter_units
from .vision import read_scans

if TYPE_CHECKING:
    from .pipeline import BuildPipeline

__all__ = ["LEFT", "BuildRun"]

log = logging.getLogger(__name__)

# How a cancelled job's row says that documents are left, which a resume may build.
LEFT = "left to build"


class BuildRun:
    """One `add`: its job, its documents, its batches (core/build/batches.py), its progress."""

    def __init__(
        self,
        pipeline: BuildPipeline,
        kb: KnowledgeBase,
        emit: ProgressSink,
        cancel: threading.Event,
    ) -> None:
        self.p = pipeline
        self.kb = kb
        self.cancel = cancel
        self.report = BuildReport(kb=kb.name)
        self.job = 0
        self.staging = ""
        self.progress = Progress(emit)
        self.guard = PauseGuard(
            max_pause_s=pipeline.settings.llm_max_pause_s,
            cancel=cancel,
            endpoint=str(getattr(pipeline.llm, "shown_url", "the configured OPENAI_BASE_URL")),
            on_pause=self._paused,
            on_resume=self._unpaused,
        )
        self.batches = Batches(pipeline, kb, self.report, self.progress, self.guard, cancel)

    def execute(self, paths: Sequence[Path], *, resume: JobRecord | None = None) -> BuildReport:
        files, failures = collect_files(paths)
        self.report.failed.extend(failures)
        self.progress.total = count_units(files) + len(failures)
        self.progress.done = len(failures)
        home = self.p.settings.home
        self.staging = resume.staging if resume else str(staging_of(home, paths) or "")
        with build_lock(self.p.catalog.path, self.kb):
            self.job = self._claim(paths, self.staging, resume)
            self.report.job = self.job
            jobs = self.p.catalog.jobs
            if self.staging and self.p.catalog.db.dialect.shared:
                keep_uploads(jobs, self.staging)  # another machine may have to resume it
            beat = functools.partial(jobs.beat, self.job)
            with Heartbeat(beat, self.progress.snapshot, self.cancel):
                status = self._build(files)
            message, staging = self.report.stopped, self.staging
            left = self.progress.total - len(self.report.skipped) - len(self.report.failed)
            left = max(left - self.batches.indexed_docs, 0)
            if status == JobState.CANCELLED and not left:
                status = JobState.DONE  # a cancel that came after the last write changed nothing
            if status == JobState.CANCELLED:
                self._roll_back()
                self.report.cancelled = True
                self.report.indexed = self.batches.indexed_docs
                self.report.left = left
                message = f"cancelled; {self.batches.indexed_docs} document(s) indexed"
                if self.report.left:
                    message += f", {self.report.left} {LEFT}"
                    staging = ""  # the uploads stay for a resume (`resume_interrupted`)
            self._finish(status, message, staging)
        self.report.seconds = self.progress.clock.elapsed()
        self.progress.event(
            "done",
            f"{len(self.report.added)} added, {len(self.report.skipped)} "
            f"unchanged, {len(self.report.failed)} failed",
            step=self.progress.done,
            steps=self.progress.total,
            force=True,
        )
        return self.report

    def _roll_back(self) -> None:
        """Remove what a cancel left half-built (documents chunked, some of their vectors
        written), so the knowledge base holds only whole documents; a resume redoes them."""
        if self.batches.unfinished:
            with contextlib.suppress(StoreError):
                self._remove(sorted(self.batches.unfinished))
            gone = {source for _, source in self.batches.unfinished.values()}
            self.report.added = [s for s in self.report.added if s not in gone]
            self.report.replaced = [s for s in self.report.replaced if s not in gone]
            self.batches.unfinished.clear()
        self.report.chunks = self.batches.whole_chunks

    def _claim(self, paths: Sequence[Path], staging: str, resume: JobRecord | None) -> int:
        me = this_process()
        try:
            return self.p.catalog.jobs.claim(
                self.kb.id,
                total=self.progress.total,
                paths=[str(Path(p).absolute()) for p in paths],
                staging=staging,
                owner=me.owner,
                alive=owner_alive,
                resume=resume.id if resume else None,
            )
        except BuildBusyError as busy:
            raise BuildBusyError(
                f"The knowledge base {self.kb.name!r} is already being built by job {busy.job_id}"
                f" (process {busy.pid}); wait for it to finish, then try again."
            ) from None

    def _build(self, files: list[tuple[Path, str]]) -> JobState:
        """Run the stages; return how the job ended (a store failure propagates, `failed`)."""
        self.progress.event(
            "scan",
            f"{self.progress.total} document(s) to consider",
            steps=self.progress.total,
            force=True,
        )
        status: JobState = JobState.FAILED
        try:
            self.batches.warm()  # a model in this process loads while the first files parse
            self.p.vectors.ensure_collection(self.kb.dimension)
            states = self.p.catalog.document_states(self.kb.id)
            ended = JobState.DONE
            for unit in iter_units(files, workers=self.p.settings.workers):
                if self.cancel.is_set():
                    ended = JobState.CANCELLED
                    break
                if isinstance(unit, ItemFailure):
                    self.report.failed.append(unit)
                else:
                    self._build_unit(unit, states)
                self.progress.done += 1
                self.progress.event(
                    "parse", unit.source, step=self.progress.done, steps=self.progress.total
                )
            if ended == JobState.DONE and not self.cancel.is_set():
                self.batches.flush()
            # The batches in flight see a cancel between their steps and stop (BuildCancelled).
            self.batches.wait()
            status = JobState.CANCELLED if self.cancel.is_set() else ended
        except BuildCancelled:
            # Seen by a stage in hand (enrichment, embedding, a PDF parse, a pause): what it
            # had not written is redone by a resume.
            status = JobState.CANCELLED
        except LLMError as exc:
            # The endpoint is refusing, or stayed away past the longest pause: stop rather than
            # degrade every chunk. What is indexed stays; a resume redoes the rest, its finished
            # LLM calls coming from the cache.
            status = JobState.INTERRUPTED
            waited = (
                f" The build waited {self.p.settings.llm_max_pause_s:.0f} s for it and stopped;"
                if self.guard.pauses
                else " The build stopped;"
            )
            self.report.stopped = (
                f"{exc}{waited} run `zhixing resume {self.kb.name}` (or the same command again)"
                " to finish it."
            )
        finally:
            self.batches.shutdown()
            # Seal what was written, however the build ended, so that search stays fast.
            with contextlib.suppress(StoreError):
                self.p.vectors.flush(self.kb.dimension)
            if status == JobState.FAILED:  # an exception is on its way up: record the job first
                self._finish(status, "", self.staging)
        return status

    def _finish(self, status: JobState, message: str, staging: str) -> None:
        if self.job:
            # A full disk may refuse this write too: the row then says `running` for a process
            # that ends, which the next build or resume reads as `interrupted`.
            with contextlib.suppress(StoreError):
                self.p.catalog.jobs.finish(
                    self.job,
                    status=status,
                    done=self.progress.done,
                    failed=len(self.report.failed),
                    message=message,
                )
            self.job = 0
        remove_staging(staging, status, self.p.catalog.jobs)

    def _paused(self, message: str) -> None:
        with contextlib.suppress(StoreError):
            self.p.catalog.jobs.set_status(self.job, JobState.PAUSED, message)
        self.progress.event("paused", message, force=True)

    def _unpaused(self) -> None:
        with contextlib.suppress(StoreError):
            self.p.catalog.jobs.set_status(self.job, JobState.RUNNING)
        self.progress.event(
            "resumed", "the LLM endpoint answers again; the build goes on", force=True
        )

    def _build_unit(self, unit: Unit, states: dict[str, KnownDocument]) -> None:
        previous = states.get(unit.source)
        if previous and previous.unchanged(unit.sha256):
            self.report.skipped.append(unit.source)
            return
        started = time.perf_counter()
        try:
            # A cancel kills the PDF parser's processes; each page OCR reads is told.
            with cancelling(self.cancel), reporting_ocr(self._ocr_progress(unit.source)):
                doc = unit.load()
            doc = self._read_scans(unit, doc)
            chunks = chunk_document(
                doc,
                max_units=self.p.settings.chunk_units,
                overlap_units=self.p.settings.chunk_overlap_units,
            )
            if not chunks:
                raise ParseError(f"{unit.source} contains no text to index.")
        except (ParseCancelled, CallsCancelled):
            raise BuildCancelled from None
        except ParseError as exc:
            self._fail(unit, str(exc), previous)
            return
        except Exception as exc:  # a reader's or chunker's bug costs this document, not the build
            log.debug("reading %s failed", unit.source, exc_info=True)
            self._fail(unit, str(internal_error(exc, f"reading {unit.source}")), previous)
            return
        log.info(
            "%s: %d pages, %d chunks, read in %.2f s",
            unit.source,
            doc.page_count,
            len(chunks),
            time.perf_counter() - started,
        )
        self.report.warnings.extend(doc.warnings)
        if previous:
            # The new version parsed; only now is the old one (or a half-built one) cleared.
            self.batches.wait()
            self._remove([previous.id])
            if previous.status == DocumentState.INDEXED:
                self.report.replaced.append(unit.source)
        doc_id, chunk_ids = self.p.catalog.add_document(
            self.kb.id,
            source=unit.source,
            sha256=unit.sha256,
            kind=unit.kind,
            title=doc.title,
            pages=doc.page_count,
            chunks=chunks,
        )
        states[unit.source] = KnownDocument(doc_id, unit.sha256, DocumentState.CHUNKED)
        self.batches.queue(doc, doc_id, chunk_ids, chunks, unit.source)
        self.report.added.append(unit.source)

    def _read_scans(self, unit: Unit, doc: ParsedDocument) -> ParsedDocument:
        """The pages OCR read, read again by the vision model where one is set (the model
        adds, never subtracts: core/build/vision.py)."""
        if not (self.p.settings.vision_model and self.p.llm and unit.path and doc.kind == "pdf"):
            return doc

        def report(done: int, todo: int) -> None:
            self.progress.event("vision", unit.source, step=done, steps=todo, force=True)

        return read_scans(doc, unit.path, self.p.llm, cancel=self.cancel, on_page=report)

    def _ocr_progress(self, source: str) -> OcrProgress:
        def report(done: int, todo: int) -> None:
            self.progress.event("ocr", source, step=done, steps=todo, force=True)

        return report

    def _remove(self, doc_ids: list[int]) -> None:
        remove_documents(
            self.p.catalog,
            self.p.vectors,
            self.kb,
            doc_ids,
            graph=self.p.graph,
            embedder=self.p.embedder,
            flush=False,
        )

    def _fail(self, unit: Unit, error: str, previous: KnownDocument | None) -> None:
        self.report.failed.append(ItemFailure(unit.source, error))
        if previous and previous.status == DocumentState.INDEXED:
            return  # keep the version that was already there
        if previous:
            self._remove([previous.id])
        self.p.catalog.record_failure(
            self.kb.id, source=unit.source, sha256=unit.sha256, kind=unit.kind, error=error
        )
