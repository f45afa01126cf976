"""The enrich stage (docs/architecture.md §4): one knowledge extraction per chunk, then questions and graph.

With an LLM configured each chunk costs exactly one structured call (questions, plus entities
and relations in `graph` mode), cached; the built-in heuristics extract the entities and
relations of `graph` mode without one, and beside one (the model adds to them, never replaces
them: core/build/merge.py). Questions are the model's only (offline questions lowered retrieval
on every set measured, benchmarks/bench_quality.py, issue 15), so an offline index-mode build
indexes each chunk by its text alone. The results are written to the catalog here, and the
texts that need vectors (questions and touched entities) are handed back to the pipeline to
embed with the chunks.

The graph itself (entities resolved, mentions, relations, summaries) is written by
core/build/graph_writer.py; how a cancel stops the calls, and why a call fell back, is
core/build/model_calls.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..choices import BuildMode
from ..embed import Embedder
from ..errors import LLMError
from ..extract import offline_knowledge
from ..llm.boundary import Rejections
from ..llm.prompts import CHUNK_KNOWLEDGE
from ..llm.protocol import LLM
from ..llm.schemas import ChunkKnowledge
from ..models import Chunk, KnowledgeBase
from ..store import VectorStore
from ..store.graph import GraphStore
from .graph_writer import GraphWriter
from .merge import known_types, merge_knowledge, model_names
from .model_calls import call_many, fallback_reason
from .sanitize import clean_knowledge

__all__ = ["EnrichItem", "EnrichResult", "Enricher"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EnrichItem:
    doc_id: int
    chunk_id: int
    title: str
    chunk: Chunk


@dataclass
class EnrichResult:
    questions: list[tuple[int, int, str]] = field(default_factory=list)  # (doc, question id, text)
    entities: dict[int, str] = field(default_factory=dict)  # entity id -> text to embed
    degraded: dict[int, str] = field(default_factory=dict)  # chunk id -> why extraction failed
    offline_fallback: list[int] = field(default_factory=list)  # degraded, kept offline entities
    extract_seconds: float = 0.0


class Enricher:
    def __init__(
        self,
        kb: KnowledgeBase,
        graph: GraphStore,
        vectors: VectorStore,
        embedder: Embedder,
        llm: LLM | None = None,
        guard: Callable[[Callable[[], Any]], Any] | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        """`guard` runs each LLM call (the pipeline's PauseGuard waits out a lost endpoint);
        once `cancel` is set, the calls in flight are abandoned and BuildCancelled raised."""
        self.kb = kb
        self._cancel = cancel
        self._guard = guard or (lambda call: call())
        self.graph = graph
        self.vectors = vectors
        self.embedder = embedder
        self.llm = llm
        self.rejections = Rejections()  # what the boundary dropped from replies, per role
        self._graph = GraphWriter(
            kb, graph, vectors, embedder, llm, self._guard, cancel, self.rejections
        )

    def enrich(self, items: Sequence[EnrichItem]) -> EnrichResult:
        """Extract, store and return what needs embedding. An unreachable LLM raises LLMError.

        Every reply passes the boundary first (core.llm.boundary, then `clean_knowledge`):
        what cannot be used is dropped and counted in `self.rejections`; a chunk with nothing
        usable is recorded as a fallback with the reason. With a model in graph mode the offline
        extractor runs beside it and its entities are added (core/build/merge.py), so a chunk
        the model fails on keeps its offline entities; otherwise it is indexed by its text only.
        """
        result = EnrichResult()
        start = time.perf_counter()
        beside = self.llm is not None and self.kb.mode == BuildMode.GRAPH
        # The heuristics (a few ms a chunk) run while the model's requests wait on the server.
        with ThreadPoolExecutor(max_workers=1) as pool:
            heuristics = pool.submit(self._offline_all, items) if beside else None
            knowledge_list = self._extract(items)
            offline_list = heuristics.result() if heuristics else []
        result.extract_seconds = time.perf_counter() - start
        cleaned: list[tuple[EnrichItem, ChunkKnowledge | None, ChunkKnowledge | None]] = []
        for n, (item, knowledge) in enumerate(zip(items, knowledge_list, strict=True)):
            context = "\n".join([item.title, *item.chunk.heading_path, item.chunk.text])
            model: ChunkKnowledge | None = None
            if isinstance(knowledge, ChunkKnowledge):
                model, dropped = clean_knowledge(knowledge, context, self.kb.mode)
                self.rejections.extend("chunk_knowledge", dropped)
            else:
                result.degraded[item.chunk_id] = fallback_reason(knowledge)
            raw = offline_list[n] if offline_list else None
            offline = None  # the heuristics' drops are no reply's: not counted
            if isinstance(raw, ChunkKnowledge):
                offline = clean_knowledge(raw, context, self.kb.mode)[0]
            cleaned.append((item, model, offline))
        extracted = []
        types = known_types(cleaned, self._known_type) if beside else {}
        model_keys = model_names(m for _, m, _ in cleaned) if beside else None
        for item, model, offline in cleaned:
            if offline is not None and (offline.entities or offline.relations):
                if model is None:
                    result.offline_fallback.append(item.chunk_id)
                model = merge_knowledge(model or ChunkKnowledge(), offline, types)
            if model is None:
                continue
            self._store_questions(item, model, result)
            extracted.append((item, model))
        if self.kb.mode == BuildMode.GRAPH and extracted:
            chunks = [(item.chunk_id, knowledge) for item, knowledge in extracted]
            result.entities = self._graph.write(chunks, model_keys)
        if result.entities:
            result.entities = self.graph.entity_text(sorted(result.entities))
        return result

    def _known_type(self, key: str) -> str | None:
        """The type of an entity of an earlier build that `key` names, if one does."""
        known = self.graph.entities(self.graph.find_entities(self.kb.id, key)[:1])
        return known[0].type if known else None

    def _extract(self, items: Sequence[EnrichItem]) -> list[ChunkKnowledge | Exception]:
        llm = self.llm
        if llm is None:
            # Offline, an index-mode chunk is indexed by its text alone: the heuristic
            # questions made retrieval worse on every set measured (issue 15), so they are
            # neither written nor searched, and the graph mode keeps only its entities.
            if self.kb.mode == BuildMode.INDEX:
                return [ChunkKnowledge() for _ in items]
            return [self._offline(i) for i in items]
        from ..llm import chunk_knowledge_variables

        variables = [
            chunk_knowledge_variables(
                i.chunk.text,
                mode=self.kb.mode,
                title=i.title,
                heading=" > ".join(i.chunk.heading_path),
            )
            for i in items
        ]

        def call() -> list[ChunkKnowledge | Exception]:
            out = call_many(llm, CHUNK_KNOWLEDGE, variables, self.rejections, self._cancel)
            from ..llm.retry import (
                EndpointFailingError,
                EndpointRefusedError,
                EndpointUnreachableError,
            )

            failed = [a for a in out if isinstance(a, LLMError)]
            # An endpoint that is away pauses the build (the guard waits it out), and one that
            # refuses the requests themselves (key, model, structured output) stops it,
            # resumably, rather than leaving every chunk degraded.
            for answer in failed:
                if isinstance(answer, EndpointUnreachableError | EndpointRefusedError):
                    raise answer
            # A chunk the endpoint fails on while others succeed falls back alone; a batch
            # that fails whole means the endpoint is failing, and is waited out like an outage.
            if len(out) > 1 and all(isinstance(a, EndpointFailingError) for a in out):
                raise EndpointUnreachableError(str(failed[0])) from failed[0]
            return list(out)

        answers: list[ChunkKnowledge | Exception] = self._guard(call)
        return answers

    def _offline_all(self, items: Sequence[EnrichItem]) -> list[ChunkKnowledge | Exception]:
        started, out = time.perf_counter(), [self._offline(i) for i in items]
        log.info("offline extraction beside the model: %.3f s", time.perf_counter() - started)
        return out

    def _offline(self, item: EnrichItem) -> ChunkKnowledge | Exception:
        try:
            knowledge = offline_knowledge(
                item.chunk.text,
                title=item.title,
                heading_path=item.chunk.heading_path,
                mode=self.kb.mode,
            )
            return knowledge.model_copy(update={"questions": []})
        except Exception as exc:  # a heuristic's bug costs one chunk's enrichment, not the build
            log.debug("offline extraction failed on chunk %s", item.chunk_id, exc_info=True)
            return exc

    def _store_questions(
        self, item: EnrichItem, knowledge: ChunkKnowledge, result: EnrichResult
    ) -> None:
        # Stored as document line numbers, like chunks, so a citation can point at them.
        offset = item.chunk.line_start - 1
        rows = [
            (item.chunk_id, q.question, q.line_start + offset, q.line_end + offset)
            for q in knowledge.questions  # cleaned: distinct, non-empty, lines in the chunk
        ]
        ids = self.graph.add_questions(self.kb.id, rows)
        for (_, text, _, _), qid in zip(rows, ids, strict=True):
            result.questions.append((item.doc_id, qid, text))
