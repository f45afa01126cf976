"""The build pipeline: parse → chunk → enrich → embed (batched) → upsert, resumable, idempotent.

The catalog is the journal. A document's chunks are written to the catalog first (`chunked`),
then embedded and upserted in batches with deterministic primary keys, and only then is the
document marked `indexed`. So a build that is killed at any point can simply be run again:
unchanged indexed documents are skipped, and anything left half-done is cleared and redone, with
no duplicate and no lost chunk. Each build is a durable job (core.build.durable): one at a time per
knowledge base, and `resume_interrupted` reruns the jobs a kill left behind. Batches are
enriched and written strictly in document order, so the graph a build makes does not depend on
LLM concurrency, nor on where an interrupted build was resumed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..choices import BuildMode, DocumentState, JobState
from ..config import Settings
from ..embed import Embedder
from ..errors import (
    LLMError,
    NotFoundError,
    ParseError,
    StoreError,
    ZhixingError,
    internal_error,
)
from ..ingest import chunk_document
from ..ingest.pdf import ParseCancelled, cancelling
from ..llm.protocol import LLM
from ..models import Chunk, KnowledgeBase, KnownDocument, ParsedDocument
from ..store import Catalog, VectorRecord, VectorStore
from ..store.analysis import bm25_text
from ..store.graph import GraphStore
from .durable import (
    BuildBusyError,
    JobRecord,
    build_lock,
    process_alive,
    remove_staging,
    staging_of,
    this_process,
)
from .enrich import Enricher, EnrichItem
from .events import (
    BuildReport,
    ItemFailure,
    ProgressEvent,
    ProgressSink,
    RateClock,
)
from .pause import BuildCancelled, PauseGuard, until_cancelled
from .remove import remove_documents
from .sources import Unit, collect_files, count_units, iter_units
from .texts import embedding_text

if TYPE_CHECKING:
    from .estimate import BuildEstimate

__all__ = ["BuildPipeline", "embedding_text", "remove_documents"]

log = logging.getLogger(__name__)

_EVENT_INTERVAL_S = 0.25
_MAX_INFLIGHT = 3
_EMBED_STEP = 64  # texts per progress step, for an embedder that names no batch size
# How a cancelled job's row says that documents are left, which a resume may build.
_LEFT = "left to build"


@dataclass
class _Pending:
    """Chunks waiting for enrichment and vectors, and the documents they complete."""

    records: list[tuple[int, int, str, EnrichItem]]  # (doc id, chunk id, text, enrich item)
    remaining: dict[int, int]  # doc id -> chunks not yet upserted


class BuildPipeline:
    def __init__(
        self,
        catalog: Catalog,
        vectors: VectorStore,
        embedder: Embedder,
        settings: Settings,
        *,
        graph: GraphStore | None = None,
        llm: LLM | None = None,
    ) -> None:
        self.catalog = catalog
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings
        self.graph = graph or GraphStore(catalog.db)
        self.llm = llm

    def add(
        self,
        kb: KnowledgeBase,
        paths: Sequence[Path],
        on_event: ProgressSink | None = None,
        cancel: threading.Event | None = None,
    ) -> BuildReport:
        """Add files, folders and corpora to a knowledge base; return what happened to each."""
        run = _Run(self, kb, on_event or (lambda _e: None), cancel or threading.Event())
        return run.execute(paths)

    def interrupted_jobs(
        self, kb: KnowledgeBase | None = None, *, cancelled: bool = False
    ) -> list[JobRecord]:
        """The jobs a kill or a lost endpoint left unfinished, oldest first; with `cancelled`,
        also the cancelled ones whose files are still there (a cancel keeps what it had not
        built for a resume)."""
        self.catalog.jobs.interrupt_dead(process_alive)
        kb_id = kb.id if kb else None
        rows = self.catalog.jobs.all(kb_id, status=JobState.INTERRUPTED)
        if cancelled:
            rows += [
                row
                for row in self.catalog.jobs.all(kb_id, status=JobState.CANCELLED)
                if _LEFT in (row.get("message") or "")
                and any(Path(p).exists() for p in JobRecord.from_row(row).paths)
            ]
        return sorted((JobRecord.from_row(r) for r in rows), key=lambda job: job.id)

    def resume_interrupted(
        self,
        kb: KnowledgeBase | None = None,
        *,
        job_id: int | None = None,
        on_event: ProgressSink | None = None,
        cancel: threading.Event | None = None,
        cancelled: bool = False,
    ) -> list[BuildReport]:
        """Finish interrupted jobs (of one knowledge base, or one job): rerun their paths.

        With `cancelled`, cancelled jobs with documents left are finished too."""
        jobs = [
            j
            for j in self.interrupted_jobs(kb, cancelled=cancelled)
            if job_id is None or j.id == job_id
        ]
        if job_id is not None and not jobs:
            raise NotFoundError(
                f"Build job {job_id} is not interrupted; there is nothing to resume."
            )
        reports = []
        for job in jobs:
            target = self.catalog.kb_by_id(job.kb_id)
            if (target.embedding, target.dimension) != (
                self.embedder.name,
                self.embedder.dimension,
            ):
                raise ZhixingError(
                    f"{target.name!r} was built with the embedding {target.embedding}; set"
                    f" ZHIXING_EMBEDDING={target.embedding} to resume its build."
                )
            run = _Run(self, target, on_event or (lambda _e: None), cancel or threading.Event())
            reports.append(run.execute([Path(p) for p in job.paths], resume=job))
            if cancel is not None and cancel.is_set():
                break
        return reports

    def estimate(self, kb: KnowledgeBase, paths: Sequence[Path]) -> BuildEstimate | None:
        """Estimate the LLM calls and tokens an `add` would cost, before it runs (None offline)."""
        from .estimate import estimate_add

        return estimate_add(self, kb, paths)


class _Run:
    """One `add`: its counters, its batch buffer and its background flusher."""

    def __init__(
        self,
        pipeline: BuildPipeline,
        kb: KnowledgeBase,
        emit: ProgressSink,
        cancel: threading.Event,
    ) -> None:
        self.p = pipeline
        self.kb = kb
        self.emit = emit
        self.cancel = cancel
        self.report = BuildReport(kb=kb.name)
        self.job = 0
        self.staging = ""
        self.guard = PauseGuard(
            max_pause_s=pipeline.settings.llm_max_pause_s,
            cancel=cancel,
            endpoint=str(getattr(pipeline.llm, "shown_url", "the configured OPENAI_BASE_URL")),
            on_pause=self._paused,
            on_resume=self._unpaused,
        )
        self.enricher = Enricher(
            kb,
            pipeline.graph,
            pipeline.vectors,
            pipeline.embedder,
            pipeline.llm,
            self.guard,
            cancel=cancel,
        )
        self.clock = RateClock()
        self.pending = _Pending([], {})
        self.done = 0
        self.total = 0
        self.indexed_chunks = 0
        self.indexed_docs = 0  # documents this build made `indexed`
        # Documents written, not yet `indexed`: id -> (chunks, source).
        self.unfinished: dict[int, tuple[int, str]] = {}
        self.whole_chunks = 0  # the chunks of the documents this build made `indexed`
        self.queued_chunks = 0  # chunks of the documents read so far
        # Chunks embedded, a batch counting in proportion to its texts embedded (the embedding
        # thread alone writes it): the share of the read documents' work that is done.
        self.embedded = 0.0
        self._last_event = 0.0
        # Two background stages, each one thread so batches stay in order: embedding (numpy,
        # which releases the GIL) overlaps with upserting the previous batch and with parsing
        # the next documents.
        self._embedder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhixing-embed")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhixing-write")
        self._inflight: list[Future[None]] = []

    def execute(self, paths: Sequence[Path], *, resume: JobRecord | None = None) -> BuildReport:
        files, failures = collect_files(paths)
        self.report.failed.extend(failures)
        self.total = count_units(files) + len(failures)
        self.done = len(failures)
        home = self.p.settings.home
        self.staging = resume.staging if resume else str(staging_of(home, paths) or "")
        with build_lock(self.p.catalog.path, self.kb):
            self.job = self._claim(paths, self.staging, resume)
            self.report.job = self.job
            status = self._build(files)
            message, staging = self.report.stopped, self.staging
            left = self.total - len(self.report.skipped) - len(self.report.failed)
            left = max(left - self.indexed_docs, 0)
            if status == JobState.CANCELLED and not left:
                status = JobState.DONE  # a cancel that came after the last write changed nothing
            if status == JobState.CANCELLED:
                self._roll_back()
                self.report.cancelled = True
                self.report.indexed = self.indexed_docs
                self.report.left = left
                message = f"cancelled; {self.indexed_docs} document(s) indexed"
                if self.report.left:
                    message += f", {self.report.left} {_LEFT}"
                    staging = ""  # the uploads stay for a resume (`resume_interrupted`)
            self._finish(status, message, staging)
        self.report.seconds = self.clock.elapsed()
        self._event(
            "done",
            f"{len(self.report.added)} added, {len(self.report.skipped)} "
            f"unchanged, {len(self.report.failed)} failed",
            step=self.done,
            steps=self.total,
            force=True,
        )
        return self.report

    def _roll_back(self) -> None:
        """Remove what a cancel left half-built (documents chunked, some of their vectors
        written), so the knowledge base holds only whole documents; a resume redoes them."""
        if self.unfinished:
            with contextlib.suppress(StoreError):
                self._remove(sorted(self.unfinished))
            gone = {source for _, source in self.unfinished.values()}
            self.report.added = [s for s in self.report.added if s not in gone]
            self.report.replaced = [s for s in self.report.replaced if s not in gone]
            self.unfinished.clear()
        self.report.chunks = self.whole_chunks

    def _claim(self, paths: Sequence[Path], staging: str, resume: JobRecord | None) -> int:
        me = this_process()
        try:
            return self.p.catalog.jobs.claim(
                self.kb.id,
                total=self.total,
                paths=[str(Path(p).absolute()) for p in paths],
                staging=staging,
                owner=(me.pid, me.started),
                alive=process_alive,
                resume=resume.id if resume else None,
            )
        except BuildBusyError as busy:
            raise BuildBusyError(
                f"The knowledge base {self.kb.name!r} is already being built by job {busy.job_id}"
                f" (process {busy.pid}); wait for it to finish, then try again."
            ) from None

    def _build(self, files: list[tuple[Path, str]]) -> JobState:
        """Run the stages; return how the job ended (a store failure propagates, `failed`)."""
        self._event("scan", f"{self.total} document(s) to consider", steps=self.total, force=True)
        status: JobState = JobState.FAILED
        try:
            warm = getattr(self.p.embedder, "warm", None)
            if warm is not None:  # a model in this process loads while the first files parse
                self._embedder.submit(warm)
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
                self.done += 1
                self._event("parse", unit.source, step=self.done, steps=self.total)
            if ended == JobState.DONE and not self.cancel.is_set():
                self._flush()
            # The batches in flight see a cancel between their steps and stop (BuildCancelled).
            self._wait()
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
            self._embedder.shutdown(wait=True, cancel_futures=True)
            self._writer.shutdown(wait=True, cancel_futures=True)
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
                    done=self.done,
                    failed=len(self.report.failed),
                    message=message,
                )
            self.job = 0
        remove_staging(staging, status)

    def _paused(self, message: str) -> None:
        with contextlib.suppress(StoreError):
            self.p.catalog.jobs.set_status(self.job, JobState.PAUSED, message)
        self._event("paused", message, force=True)

    def _unpaused(self) -> None:
        with contextlib.suppress(StoreError):
            self.p.catalog.jobs.set_status(self.job, JobState.RUNNING)
        self._event("resumed", "the LLM endpoint answers again; the build goes on", force=True)

    def _build_unit(self, unit: Unit, states: dict[str, KnownDocument]) -> None:
        previous = states.get(unit.source)
        if previous and previous.unchanged(unit.sha256):
            self.report.skipped.append(unit.source)
            return
        started = time.perf_counter()
        try:
            with cancelling(self.cancel):  # a cancel kills the PDF parser's processes
                doc = unit.load()
            chunks = chunk_document(
                doc,
                max_units=self.p.settings.chunk_units,
                overlap_units=self.p.settings.chunk_overlap_units,
            )
            if not chunks:
                raise ParseError(f"{unit.source} contains no text to index.")
        except ParseCancelled:
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
            self._wait()
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
        self.unfinished[doc_id] = (len(chunks), unit.source)
        self._queue(doc, doc_id, chunk_ids, chunks)
        self.report.added.append(unit.source)

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

    def _queue(
        self, doc: ParsedDocument, doc_id: int, chunk_ids: list[int], chunks: list[Chunk]
    ) -> None:
        self.pending.remaining[doc_id] = len(chunks)
        self.queued_chunks += len(chunks)
        for chunk_id, chunk in zip(chunk_ids, chunks, strict=True):
            item = EnrichItem(doc_id, chunk_id, doc.title, chunk)
            self.pending.records.append((doc_id, chunk_id, embedding_text(doc.title, chunk), item))
            if len(self.pending.records) >= self.p.settings.embed_batch:
                self._flush()

    def _flush(self) -> None:
        """Hand the buffered chunks to the background flusher (at most one batch in flight)."""
        batch = self.pending.records
        if not batch:
            return
        counts: dict[int, int] = {}
        for doc_id, _, _, _ in batch:
            counts[doc_id] = counts.get(doc_id, 0) + 1
        finished = []
        for doc_id, n in counts.items():
            self.pending.remaining[doc_id] -= n
            if self.pending.remaining[doc_id] == 0:
                del self.pending.remaining[doc_id]
                finished.append(doc_id)
        self.pending.records = []
        # Bound the batches in flight, so memory stays flat however large the build.
        while len(self._inflight) >= _MAX_INFLIGHT:
            self._inflight.pop(0).result()
        prepared = self._embedder.submit(self._prepare, batch)
        self._inflight.append(self._writer.submit(self._write, len(batch), prepared, finished))

    def _prepare(self, batch: list[tuple[int, int, str, EnrichItem]]) -> list[VectorRecord]:
        """Enrich a batch (questions, entities), then embed chunks, questions and entities."""
        how = (
            f"LLM, concurrency {self.p.settings.llm_concurrency}"
            if self.p.llm is not None
            else "built-in heuristics"
        )
        if self.kb.mode == BuildMode.GRAPH or self.p.llm is not None:
            stage = "entity graph" if self.kb.mode == BuildMode.GRAPH else "question index"
            self._event(stage, f"{len(batch)} chunks ({how})", steps=len(batch), force=True)
        items = [item for _, _, _, item in batch]
        started = time.perf_counter()
        if self.cancel.is_set():
            raise BuildCancelled
        try:
            enriched = self.enricher.enrich(items)
        except (ZhixingError, BuildCancelled):
            raise
        except Exception as exc:
            log.debug("enriching a batch of %s failed", self.kb.name, exc_info=True)
            titles = ", ".join(sorted({repr(i.title) for i in items})[:3])
            raise internal_error(
                exc, f"extracting knowledge from {titles} into {self.kb.name!r}"
            ) from None
        rows = [(doc_id, "chunk", chunk_id, text) for doc_id, chunk_id, text, _ in batch]
        # Offline there are none (core/build/enrich.py): they made retrieval worse.
        rows += [(doc_id, "question", qid, text) for doc_id, qid, text in enriched.questions]
        rows += [(0, "entity", eid, text) for eid, text in enriched.entities.items()]
        self.report.questions += len(enriched.questions)
        self.report.degraded += len(enriched.degraded)
        self.report.offline += len(enriched.offline_fallback)
        for chunk_id, reason in enriched.degraded.items():
            self.report.fallbacks[reason] = self.report.fallbacks.get(reason, 0) + 1
            self.p.graph.mark_degraded([chunk_id], reason)
        self.report.rejected = self.enricher.rejections.snapshot()
        self.report.extract_seconds += enriched.extract_seconds
        log.info(
            "enriched %d chunks of %s (%s) in %.2f s: %d questions, %d entities, %d degraded",
            len(batch),
            self.kb.name,
            how,
            time.perf_counter() - started,
            len(enriched.questions),
            len(enriched.entities),
            len(enriched.degraded),
        )
        started = time.perf_counter()
        vectors = self._embed([text for *_, text in rows], chunks=len(batch))
        log.info("embedded %d texts in %.2f s", len(rows), time.perf_counter() - started)
        # Milvus keeps `text` for BM25 only: chunks and questions go in analysed, as queries do.
        return [
            VectorRecord(
                kb=self.kb.id,
                doc=doc,
                kind=kind,
                ref_id=ref,
                text=text if kind == "entity" else bm25_text(text, self.kb.analysis),
                vector=vector,
            )
            for (doc, kind, ref, text), vector in zip(rows, vectors, strict=True)
        ]

    def _embed(self, texts: list[str], *, chunks: int) -> np.ndarray:
        """Embed a batch's texts a step at a time, saying after each step how far it is: a
        batch of a few hundred texts takes a CPU model seconds to minutes.

        A step is a whole number of the embedder's own slices (or requests), so the vectors are
        the ones a single call would give, and more than one slice, so the model still lets a
        search's query go first between slices (core/embed.py).
        """
        step = 2 * getattr(self.p.embedder, "slice", 0) or getattr(
            self.p.embedder, "batch_size", _EMBED_STEP
        )
        base = self.embedded
        parts: list[np.ndarray] = []
        self._event("embedding", f"0/{len(texts)} texts embedded", steps=len(texts), force=True)
        for start in range(0, len(texts), step):
            part = texts[start : start + step]
            # An embedding endpoint that is away pauses the build too; a cancel stops it
            # between steps, and abandons the step in hand.
            embed = functools.partial(self.p.embedder.embed, part)
            parts.append(self.guard(functools.partial(until_cancelled, embed, self.cancel)))
            embedded = start + len(part)
            self.embedded = base + chunks * embedded / len(texts)
            self._event(
                "embedding",
                f"{embedded}/{len(texts)} texts embedded",
                step=embedded,
                steps=len(texts),
                force=True,
            )
        self.embedded = base + chunks
        return np.concatenate(parts) if parts else np.zeros((0, self.kb.dimension), np.float32)

    def _write(self, chunks: int, prepared: Future[Any], finished: list[int]) -> None:
        records = prepared.result()
        if self.cancel.is_set():
            raise BuildCancelled  # a batch not yet written stays for a resume
        self._event("indexing", f"0/{len(records)} vectors written", steps=len(records), force=True)
        started = time.perf_counter()
        self.p.vectors.upsert(self.kb.dimension, records)
        log.info("wrote %d vectors in %.2f s", len(records), time.perf_counter() - started)
        # A document becomes `indexed` only once every one of its chunks has a vector.
        self.p.catalog.mark_indexed(finished)
        self.whole_chunks += sum(self.unfinished.pop(d, (0, ""))[0] for d in finished)
        self.indexed_chunks += chunks
        self.indexed_docs += len(finished)
        self.report.chunks = self.indexed_chunks
        self._event(
            "indexing",
            f"{len(records)}/{len(records)} vectors written",
            step=len(records),
            steps=len(records),
            force=True,
        )

    def _wait(self) -> None:
        """Wait for every batch in flight; re-raise the first failure."""
        while self._inflight:
            self._inflight.pop(0).result()

    def _event(
        self, stage: str, message: str, *, step: int = 0, steps: int = 0, force: bool = False
    ) -> None:
        now = self.clock.elapsed()
        if not force and now - self._last_event < _EVENT_INTERVAL_S and self.done < self.total:
            return
        self._last_event = now
        fraction = self._fraction()
        self.emit(
            ProgressEvent(
                stage=stage,
                done=self.done,
                total=self.total,
                message=message,
                eta_s=self.clock.eta(fraction),
                chunks=self.indexed_chunks,
                embedded=int(self.embedded),
                queued=self.queued_chunks,
                step=step,
                steps=steps,
                fraction=fraction,
            )
        )

    def _fraction(self) -> float:
        """Documents read, times chunks embedded of those read (see ProgressEvent)."""
        read = self.done / self.total if self.total else 1.0
        if not self.queued_chunks:
            return read
        return read * min(self.embedded / self.queued_chunks, 1.0)
