"""A build's chunks enriched, embedded and written in batches (docs/architecture.md §4).

Batches go through two background stages, each one thread so batches stay in document order:
enriching and embedding a batch (numpy, which releases the GIL) overlaps with upserting the
previous one and with parsing the next documents. At most `_MAX_INFLIGHT` batches are in flight,
so memory stays flat however large the build. A document becomes `indexed` only once every one
of its chunks has a vector; a cancel stops a batch between its steps.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..choices import BuildMode
from ..errors import ZhixingError, internal_error
from ..models import Chunk, KnowledgeBase, ParsedDocument
from ..store import VectorRecord
from ..store.analysis import bm25_text
from .enrich import Enricher, EnrichItem
from .events import BuildReport, Progress
from .pause import BuildCancelled, PauseGuard, until_cancelled
from .texts import embedding_text

if TYPE_CHECKING:
    from .pipeline import BuildPipeline

__all__ = ["Batches"]

log = logging.getLogger(__name__)

_MAX_INFLIGHT = 3
_EMBED_STEP = 64  # texts per progress step, for an embedder that names no batch size


@dataclass
class _Pending:
    """Chunks waiting for enrichment and vectors, and the documents they complete."""

    records: list[tuple[int, int, str, EnrichItem]]  # (doc id, chunk id, text, enrich item)
    remaining: dict[int, int]  # doc id -> chunks not yet upserted


class Batches:
    """The batches of one run: its buffer of chunks, its two background stages, and the
    documents written but not yet `indexed`."""

    def __init__(
        self,
        pipeline: BuildPipeline,
        kb: KnowledgeBase,
        report: BuildReport,
        progress: Progress,
        guard: PauseGuard,
        cancel: threading.Event,
    ) -> None:
        self.p = pipeline
        self.kb = kb
        self.report = report
        self.progress = progress
        self.guard = guard
        self.cancel = cancel
        self.enricher = Enricher(
            kb,
            pipeline.graph,
            pipeline.vectors,
            pipeline.embedder,
            pipeline.llm,
            guard,
            cancel=cancel,
        )
        self.pending = _Pending([], {})
        self.indexed_docs = 0  # documents this build made `indexed`
        # Documents written, not yet `indexed`: id -> (chunks, source).
        self.unfinished: dict[int, tuple[int, str]] = {}
        self.whole_chunks = 0  # the chunks of the documents this build made `indexed`
        # Two background stages, each one thread so batches stay in order: embedding (numpy,
        # which releases the GIL) overlaps with upserting the previous batch and with parsing
        # the next documents.
        self._embedder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhixing-embed")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhixing-write")
        self._inflight: list[Future[None]] = []

    def warm(self) -> None:
        """Load the embedding model, if it runs in this process, while the first files parse."""
        warm = getattr(self.p.embedder, "warm", None)
        if warm is not None:
            self._embedder.submit(warm)

    def shutdown(self) -> None:
        """Stop both stages, cancelling the batches not yet started."""
        self._embedder.shutdown(wait=True, cancel_futures=True)
        self._writer.shutdown(wait=True, cancel_futures=True)

    def queue(
        self,
        doc: ParsedDocument,
        doc_id: int,
        chunk_ids: list[int],
        chunks: list[Chunk],
        source: str,
    ) -> None:
        """Buffer a document's chunks, written to the catalog as `chunked`, for its batches."""
        self.unfinished[doc_id] = (len(chunks), source)
        self.pending.remaining[doc_id] = len(chunks)
        self.progress.queued_chunks += len(chunks)
        for chunk_id, chunk in zip(chunk_ids, chunks, strict=True):
            item = EnrichItem(doc_id, chunk_id, doc.title, chunk)
            self.pending.records.append((doc_id, chunk_id, embedding_text(doc.title, chunk), item))
            if len(self.pending.records) >= self.p.settings.embed_batch:
                self.flush()

    def flush(self) -> None:
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
            self.progress.event(stage, f"{len(batch)} chunks ({how})", steps=len(batch), force=True)
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
        base = self.progress.embedded
        parts: list[np.ndarray] = []
        self.progress.event(
            "embedding", f"0/{len(texts)} texts embedded", steps=len(texts), force=True
        )
        for start in range(0, len(texts), step):
            part = texts[start : start + step]
            # An embedding endpoint that is away pauses the build too; a cancel stops it
            # between steps, and abandons the step in hand.
            embed = functools.partial(self.p.embedder.embed, part)
            parts.append(self.guard(functools.partial(until_cancelled, embed, self.cancel)))
            embedded = start + len(part)
            self.progress.embedded = base + chunks * embedded / len(texts)
            self.progress.event(
                "embedding",
                f"{embedded}/{len(texts)} texts embedded",
                step=embedded,
                steps=len(texts),
                force=True,
            )
        self.progress.embedded = base + chunks
        return np.concatenate(parts) if parts else np.zeros((0, self.kb.dimension), np.float32)

    def _write(self, chunks: int, prepared: Future[Any], finished: list[int]) -> None:
        records = prepared.result()
        if self.cancel.is_set():
            raise BuildCancelled  # a batch not yet written stays for a resume
        self.progress.event(
            "indexing", f"0/{len(records)} vectors written", steps=len(records), force=True
        )
        started = time.perf_counter()
        self.p.vectors.upsert(self.kb.dimension, records)
        log.info("wrote %d vectors in %.2f s", len(records), time.perf_counter() - started)
        # A document becomes `indexed` only once every one of its chunks has a vector.
        self.p.catalog.mark_indexed(finished)
        self.whole_chunks += sum(self.unfinished.pop(d, (0, ""))[0] for d in finished)
        self.progress.indexed_chunks += chunks
        self.indexed_docs += len(finished)
        self.report.chunks = self.progress.indexed_chunks
        self.progress.event(
            "indexing",
            f"{len(records)}/{len(records)} vectors written",
            step=len(records),
            steps=len(records),
            force=True,
        )

    def wait(self) -> None:
        """Wait for every batch in flight; re-raise the first failure."""
        while self._inflight:
            self._inflight.pop(0).result()
