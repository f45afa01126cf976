"""The build pipeline: parse → chunk → enrich → embed (batched) → upsert, resumable, idempotent.

The catalog is the journal. A document's chunks are written to the catalog first (`chunked`),
then embedded and upserted in batches with deterministic primary keys, and only then is the
document marked `indexed`. So a build that is killed at any point can simply be run again:
unchanged indexed documents are skipped, and anything left half-done is cleared and redone, with
no duplicate and no lost chunk. Each build is a durable job (core.build.durable): one at a time per
knowledge base, and `resume_interrupted` reruns the jobs a kill left behind. Batches are
enriched and written strictly in document order, so the graph a build makes does not depend on
LLM concurrency, nor on where an interrupted build was resumed.

`BuildPipeline` is the door; one build is a `BuildRun` (core/build/run.py: its job, its documents,
a cancel's roll-back), whose batches are enriched, embedded and written by core/build/batches.py.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..choices import JobState
from ..config import Settings
from ..embed import Embedder
from ..errors import NotFoundError, ZhixingError
from ..llm.protocol import LLM
from ..models import KnowledgeBase
from ..store import Catalog, VectorStore
from ..store.graph import GraphStore
from .durable import JobRecord, local_paths, owner_alive, resumable_here
from .events import BuildReport, ProgressSink
from .run import LEFT, BuildRun

if TYPE_CHECKING:
    from .estimate import BuildEstimate

__all__ = ["BuildPipeline"]


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
        run = BuildRun(self, kb, on_event or (lambda _e: None), cancel or threading.Event())
        return run.execute(paths)

    def interrupted_jobs(
        self, kb: KnowledgeBase | None = None, *, cancelled: bool = False
    ) -> list[JobRecord]:
        """The jobs a kill or a lost endpoint left unfinished, oldest first; with `cancelled`,
        also the cancelled ones whose files are still there (a cancel keeps what it had not
        built for a resume)."""
        self.catalog.jobs.interrupt_dead(owner_alive)
        kb_id = kb.id if kb else None
        rows = self.catalog.jobs.all(kb_id, status=JobState.INTERRUPTED)
        if cancelled:
            rows += [
                row
                for row in self.catalog.jobs.all(kb_id, status=JobState.CANCELLED)
                if LEFT in (row.get("message") or "")
                and resumable_here(self.catalog.jobs, JobRecord.from_row(row))
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
            job = local_paths(self.catalog.jobs, job, self.settings.home)
            run = BuildRun(self, target, on_event or (lambda _e: None), cancel or threading.Event())
            reports.append(run.execute([Path(p) for p in job.paths], resume=job))
            if cancel is not None and cancel.is_set():
                break
        return reports

    def estimate(self, kb: KnowledgeBase, paths: Sequence[Path]) -> BuildEstimate | None:
        """Estimate the LLM calls and tokens an `add` would cost, before it runs (None offline)."""
        from .estimate import estimate_add

        return estimate_add(self, kb, paths)
