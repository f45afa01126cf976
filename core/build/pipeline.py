"""The offline build pipeline: parse → chunk → embed (batched) → upsert, resumable and idempotent.

The catalog is the journal. A document's chunks are written to the catalog first (`chunked`),
then embedded and upserted in batches with deterministic primary keys, and only then is the
document marked `indexed`. So a build that is killed at any point can simply be run again:
unchanged indexed documents are skipped, and anything left half-done is cleared and redone, with
no duplicate and no lost chunk.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.build.enrich import Enricher, EnrichItem
from core.build.events import BuildReport, ItemFailure, ProgressEvent, ProgressSink, RateClock
from core.build.sources import Unit, collect_files, count_units, iter_units
from core.config import Settings
from core.embed import Embedder
from core.errors import LLMError, ParseError, StoreError
from core.ingest import chunk_document
from core.models import Chunk, KnowledgeBase, ParsedDocument
from core.store import Catalog, VectorRecord, VectorStore
from core.store.analysis import bm25_text
from core.store.graph import GraphStore

__all__ = ["BuildPipeline", "embedding_text", "remove_documents"]

_EVENT_INTERVAL_S = 0.25
_MAX_INFLIGHT = 3


def embedding_text(title: str, chunk: Chunk) -> str:
    """The text that is embedded and BM25-indexed: title and heading path give a chunk context."""
    head = [title] if title else []
    head += [h for h in chunk.heading_path if h and h != title]
    return "\n".join([" > ".join(head), chunk.text]) if head else chunk.text


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
        llm: object | None = None,
    ) -> None:
        self.catalog = catalog
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings
        self.graph = graph or GraphStore(catalog)
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

    def estimate(self, kb: KnowledgeBase, paths: Sequence[Path]) -> dict[str, Any] | None:
        """Estimate the LLM calls and tokens an `add` would cost, before it runs.

        A dry pass: parse and chunk what would be (re)built, then price one extraction call
        per chunk; unchanged documents and cached prompts cost nothing. None when offline.
        """
        if self.llm is None:
            return None
        from core.llm import ROLES, chunk_knowledge_variables

        files, _ = collect_files(paths)
        states = self.catalog.document_states(kb.id)
        variables = []
        for unit in iter_units(files, workers=self.settings.workers):
            if isinstance(unit, ItemFailure):
                continue
            previous = states.get(unit.source)
            if previous and previous[1:] == (unit.sha256, "indexed"):
                continue
            try:
                doc = unit.load()
            except ParseError:
                continue
            for chunk in chunk_document(
                doc,
                max_units=self.settings.chunk_units,
                overlap_units=self.settings.chunk_overlap_units,
            ):
                variables.append(
                    chunk_knowledge_variables(
                        chunk.text,
                        mode=kb.mode,
                        title=doc.title,
                        heading=" > ".join(chunk.heading_path),
                    )
                )
        estimate = self.llm.estimate(ROLES["chunk_knowledge"], variables)  # type: ignore[attr-defined]
        return {**estimate, "chunks": len(variables), "concurrency": self.settings.llm_concurrency}


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
        self.enricher = Enricher(
            kb, pipeline.graph, pipeline.vectors, pipeline.embedder, pipeline.llm
        )
        self.clock = RateClock()
        self.pending = _Pending([], {})
        self.done = 0
        self.total = 0
        self.indexed_chunks = 0
        self._last_event = 0.0
        # Two background stages, each one thread so batches stay in order: embedding (numpy,
        # which releases the GIL) overlaps with upserting the previous batch and with parsing
        # the next documents.
        self._embedder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhixing-embed")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhixing-write")
        self._inflight: list[Future[None]] = []

    def execute(self, paths: Sequence[Path]) -> BuildReport:
        files, failures = collect_files(paths)
        self.report.failed.extend(failures)
        self.total = count_units(files) + len(failures)
        self.done = len(failures)
        self._event("scan", f"{self.total} document(s) to consider", force=True)
        self.p.vectors.ensure_collection(self.kb.dimension)
        job = self.p.catalog.start_job(self.kb.id, self.total)
        status = "failed"
        states = self.p.catalog.document_states(self.kb.id)
        try:
            for unit in iter_units(files, workers=self.p.settings.workers):
                if self.cancel.is_set():
                    status = "cancelled"
                    break
                if isinstance(unit, ItemFailure):
                    self.report.failed.append(unit)
                else:
                    self._build_unit(unit, states)
                self.done += 1
                self._event("parse", unit.source)
            else:
                status = "done"
            self._flush()
            self._wait()
        except LLMError as exc:
            # The endpoint is down or refusing: stop rather than degrade every chunk. What is
            # indexed stays; the rest is redone by the same command, its finished LLM calls
            # coming from the cache.
            status = "stopped"
            self.report.stopped = (
                f"{exc} The build stopped; run the same command again to resume it."
            )
        finally:
            self._embedder.shutdown(wait=True, cancel_futures=True)
            self._writer.shutdown(wait=True, cancel_futures=True)
            # Seal what was written, however the build ended, so that search stays fast.
            with contextlib.suppress(StoreError):
                self.p.vectors.flush(self.kb.dimension)
            failed = len(self.report.failed)
            self.p.catalog.finish_job(job, status=status, done=self.done, failed=failed)
        self.report.seconds = self.clock.elapsed()
        self._event(
            "done",
            f"{len(self.report.added)} added, {len(self.report.skipped)} "
            f"unchanged, {len(self.report.failed)} failed",
            force=True,
        )
        return self.report

    def _build_unit(self, unit: Unit, states: dict[str, tuple[int, str, str]]) -> None:
        previous = states.get(unit.source)
        if previous and previous[1] == unit.sha256 and previous[2] == "indexed":
            self.report.skipped.append(unit.source)
            return
        try:
            doc = unit.load()
            chunks = chunk_document(
                doc,
                max_units=self.p.settings.chunk_units,
                overlap_units=self.p.settings.chunk_overlap_units,
            )
            if not chunks:
                raise ParseError(f"{unit.source} contains no text to index.")
        except ParseError as exc:
            self._fail(unit, str(exc), previous)
            return
        self.report.warnings.extend(doc.warnings)
        if previous:
            # The new version parsed; only now is the old one (or a half-built one) cleared.
            self._wait()
            self._remove(previous[0])
            if previous[2] == "indexed":
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
        states[unit.source] = (doc_id, unit.sha256, "chunked")
        self._queue(doc, doc_id, chunk_ids, chunks)
        self.report.added.append(unit.source)

    def _remove(self, doc_id: int) -> None:
        remove_documents(
            self.p.catalog,
            self.p.vectors,
            self.kb,
            [doc_id],
            graph=self.p.graph,
            embedder=self.p.embedder,
            flush=False,
        )

    def _fail(self, unit: Unit, error: str, previous: tuple[int, str, str] | None) -> None:
        self.report.failed.append(ItemFailure(unit.source, error))
        if previous and previous[2] == "indexed":
            return  # keep the version that was already there
        if previous:
            self._remove(previous[0])
        self.p.catalog.record_failure(
            self.kb.id, source=unit.source, sha256=unit.sha256, kind=unit.kind, error=error
        )

    def _queue(
        self, doc: ParsedDocument, doc_id: int, chunk_ids: list[int], chunks: list[Chunk]
    ) -> None:
        self.pending.remaining[doc_id] = len(chunks)
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
        stage = "entity graph" if self.kb.mode == "graph" else "question index"
        self._event(stage, f"{len(batch)} chunks ({how})", force=True)
        enriched = self.enricher.enrich([item for _, _, _, item in batch])
        rows = [(doc_id, "chunk", chunk_id, text) for doc_id, chunk_id, text, _ in batch]
        rows += [(doc_id, "question", qid, text) for doc_id, qid, text in enriched.questions]
        rows += [(0, "entity", eid, text) for eid, text in enriched.entities.items()]
        self.report.questions += len(enriched.questions)
        self.report.degraded += len(enriched.degraded)
        self.p.graph.mark_degraded(enriched.degraded)
        self.report.extract_seconds += enriched.extract_seconds
        self._event("indexing", f"embedding {len(rows)} texts", force=True)
        vectors = self.p.embedder.embed([text for *_, text in rows])
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

    def _write(self, chunks: int, prepared: Future[Any], finished: list[int]) -> None:
        self.p.vectors.upsert(self.kb.dimension, prepared.result())
        # A document becomes `indexed` only once every one of its chunks has a vector.
        self.p.catalog.mark_indexed(finished)
        self.indexed_chunks += chunks
        self.report.chunks = self.indexed_chunks

    def _wait(self) -> None:
        """Wait for every batch in flight; re-raise the first failure."""
        while self._inflight:
            self._inflight.pop(0).result()

    def _event(self, stage: str, message: str, *, force: bool = False) -> None:
        now = self.clock.elapsed()
        if not force and now - self._last_event < _EVENT_INTERVAL_S and self.done < self.total:
            return
        self._last_event = now
        self.emit(
            ProgressEvent(
                stage=stage,
                done=self.done,
                total=self.total,
                message=message,
                eta_s=self.clock.eta(self.done, self.total),
                chunks=self.indexed_chunks,
            )
        )


def remove_documents(
    catalog: Catalog,
    vectors: VectorStore,
    kb: KnowledgeBase,
    doc_ids: Sequence[int],
    *,
    graph: GraphStore,
    embedder: Embedder,
    flush: bool = True,
) -> None:
    """Remove documents and every trace of them: graph mentions, vectors, then catalog rows.

    The documents are flagged `removing` first, so a removal that is interrupted half-way is
    never mistaken for an indexed document: running it again (or re-adding) completes it.
    Entities and relations no other document mentions go; the survivors' descriptions are
    rebuilt from what remains and re-embedded.
    """
    if not doc_ids:
        return
    catalog.mark_removing(doc_ids)
    orphans, _, survivors = graph.forget_documents(doc_ids)
    vectors.delete_documents(kb.dimension, kb=kb.id, docs=doc_ids)  # chunks and questions
    vectors.delete_refs(kb.dimension, "entity", orphans)
    texts = graph.entity_text(survivors)
    if texts:
        vecs = embedder.embed(list(texts.values()))
        records = [
            VectorRecord(kb=kb.id, doc=0, kind="entity", ref_id=eid, text=text, vector=v)
            for (eid, text), v in zip(texts.items(), vecs, strict=True)
        ]
        vectors.upsert(kb.dimension, records)
    if flush:  # a build that removes old versions flushes once, at its end
        vectors.flush(kb.dimension)
    for doc_id in doc_ids:
        catalog.delete_document(doc_id)
