"""The enrich stage (docs/architecture.md §4): one knowledge extraction per chunk, then questions and graph.

With an LLM configured each chunk costs exactly one structured call (questions, plus entities
and relations in `graph` mode), cached; the built-in heuristics extract the entities and
relations of `graph` mode without one, and beside one (the model adds to them, never replaces
them: core/build/merge.py). Questions are the model's only (offline questions lowered retrieval
on every set measured, benchmarks/bench_quality.py, issue 15), so an offline index-mode build
indexes each chunk by its text alone. The results are written to the catalog here, and the
texts that need vectors (questions and touched entities) are handed back to the pipeline to
embed with the chunks.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..choices import BuildMode
from ..embed import Embedder
from ..errors import LLMError, LLMOutputError
from ..extract import offline_knowledge
from ..llm.boundary import Rejections
from ..llm.prompts import CHUNK_KNOWLEDGE, SAME_ENTITY, SUMMARIZE_DESCRIPTION, Prompt, T
from ..llm.protocol import LLM, CallsCancelled
from ..llm.schemas import ChunkKnowledge
from ..models import Chunk, KnowledgeBase
from ..store import VectorStore
from ..store.graph import GraphStore
from ..text.chinese import CJK
from ..text.entity_names import normalize_entity_name
from .merge import known_types, merge_knowledge, model_names
from .pause import BuildCancelled
from .sanitize import clean_knowledge

__all__ = ["ALIAS_SIMILARITY", "EnrichItem", "EnrichResult", "Enricher"]

log = logging.getLogger(__name__)

# Cosine of two entity *names* under the built-in model above which two entities of the same
# type are one: "SQL injection"/"SQL注入" score 0.79 and "跨站脚本"/"Cross-site scripting" 0.77,
# while "SQL注入"/"命令注入" score 0.49 and "CSRF"/"XSS" 0.44. Names in one script need more:
# short words of one language sit close without being the same ("参数化"/"参数").
ALIAS_SIMILARITY = 0.76
SAME_SCRIPT_SIMILARITY = 0.9
# Identifiers are never merged by similarity: "V3.5.1" and "V5.3.5", "TLS 1.2" and "TLS 1.3"
# embed alike but are different things.
_NO_SIMILARITY_TYPES = {"clause", "weakness", "standard"}
_DIGIT = re.compile(r"\d")
_MAX_SUMMARY_CHARS = 1500  # a "three-sentence" summary longer than this is not one


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
        # Entities created during this build, not yet in Milvus: (id, type, name vector).
        self._fresh: list[tuple[int, str, np.ndarray]] = []
        self._names: dict[int, np.ndarray] = {}  # name vectors of entities from earlier builds
        self._ends: dict[str, int] = {}  # relation ends found among earlier entities
        self._display: dict[int, str] = {}  # entity id -> its name, for the similarity rules
        self.rejections = Rejections()  # what the boundary dropped from replies, per role
        self._model_keys: set[str] | None = None  # beside the heuristics: the names the model wrote

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
                result.degraded[item.chunk_id] = _fallback_reason(knowledge)
            raw = offline_list[n] if offline_list else None
            offline = None  # the heuristics' drops are no reply's: not counted
            if isinstance(raw, ChunkKnowledge):
                offline = clean_knowledge(raw, context, self.kb.mode)[0]
            cleaned.append((item, model, offline))
        extracted = []
        types = known_types(cleaned, self._known_type) if beside else {}
        self._model_keys = model_names(m for _, m, _ in cleaned) if beside else None
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
            self._store_graph(extracted, result)
        if result.entities:
            result.entities = self.graph.entity_text(sorted(result.entities))
        return result

    def _by_model(self, key: str) -> bool:
        """Whether the model named `key`: only its own names cost it a merge or summary call."""
        return self._model_keys is None or key in self._model_keys

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
            out = self._call_many(llm, CHUNK_KNOWLEDGE, variables)
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

        return self._guard(call)

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

    def _store_graph(
        self, extracted: list[tuple[EnrichItem, ChunkKnowledge]], result: EnrichResult
    ) -> None:
        """Resolve every entity of the batch at once, then record mentions and relations."""
        wanted: dict[tuple[str, str], str] = {}
        for _, knowledge in extracted:
            for entity in knowledge.entities:
                name = " ".join(entity.name.split())
                if key := normalize_entity_name(name):
                    wanted.setdefault((key, _type(entity.type)), name)
        # A relation's end that is no entity of the batch is looked up under any type first,
        # and only made a new `concept` when it is known nowhere.
        keys = {key for key, _ in wanted}
        for _, knowledge in extracted:
            for rel in knowledge.relations:
                for end in (rel.source, rel.target):
                    name = " ".join(end.split())
                    key = normalize_entity_name(name)
                    if key and key not in keys:
                        keys.add(key)
                        known = self.graph.find_entities(self.kb.id, key)
                        if known:
                            self._ends[key] = known[0]
                        else:
                            wanted.setdefault((key, "concept"), name)
        ids = self._resolve_all(wanted)
        ends = {key: entity_id for (key, _), entity_id in ids.items()} | self._ends
        relations: list[int] = []
        for item, knowledge in extracted:
            local: dict[str, int] = {}
            for entity in knowledge.entities:
                name = " ".join(entity.name.split())
                key = normalize_entity_name(name)
                if not key:
                    continue
                entity_id = ids[(key, _type(entity.type))]
                # Two names of one entity in a chunk ("SQL", then its alias "SQL 语句", or an
                # offline name beside the model's) make one mention: the first, the model's.
                if entity_id not in local.values():
                    self.graph.mention_entity(
                        entity_id,
                        item.chunk_id,
                        name,
                        entity.description.strip(),
                        dict(entity.attributes),
                    )
                local[key] = entity_id
                result.entities[entity_id] = ""
            for rel in knowledge.relations:
                pair: list[int | None] = []
                for end in (rel.source, rel.target):
                    name = " ".join(end.split())
                    key = normalize_entity_name(name)
                    found = local.get(key) or ends.get(key)
                    if found is not None and key not in local:
                        if found not in local.values():
                            self.graph.mention_entity(found, item.chunk_id, name, "", {})
                        local[key] = found
                        result.entities[found] = ""
                    pair.append(found)
                source, target = pair
                if source is None or target is None or source == target:
                    continue
                type_ = "_".join((rel.type or "related_to").strip().lower().split())
                relations.append(
                    self.graph.relate(
                        self.kb.id,
                        source,
                        target,
                        type_ or "related_to",
                        item.chunk_id,
                        rel.description.strip(),
                    )
                )
        self.graph.refresh(result.entities, relations)
        # Only what the model named costs it a summary; the heuristics' entities merge their
        # descriptions as an offline build does.
        asked = {e for (key, _), e in ids.items() if self._by_model(key)}
        asked |= {e for key, e in self._ends.items() if self._by_model(key)}
        self.summarize_long([e for e in result.entities if e in asked])

    def _resolve_all(self, wanted: dict[tuple[str, str], str]) -> dict[tuple[str, str], int]:
        """Map (normalized name, type) to entity ids: known names and aliases first, then
        names close enough to an entity of the same type, else a new entity."""
        ids: dict[tuple[str, str], int] = {}
        unknown = []
        for (key, type_), name in wanted.items():
            found = self.graph.resolve(self.kb.id, key, type_)
            if found is None:
                unknown.append((key, type_, name))
            else:
                ids[(key, type_)] = found
        if not unknown:
            return ids
        names = [name for _, _, name in unknown]
        vectors = self._guard(lambda: self.embedder.embed(names))
        stored = self._stored_candidates(vectors)
        # Entities made earlier in this build are not in Milvus yet: compare with them in one
        # matrix product, and with this batch's own new ones as they are made.
        earlier = len(self._fresh)
        scores = (vectors @ np.vstack([v for _, _, v in self._fresh]).T) if earlier else None
        for n, ((key, type_, name), vector) in enumerate(zip(unknown, vectors, strict=True)):
            candidates = list(stored[n])
            if scores is not None:
                for j in np.flatnonzero(scores[n] >= ALIAS_SIMILARITY):
                    candidates.append(self._fresh[int(j)])
            candidates.extend(self._fresh[earlier:])
            alias_of = self._closest(name, vector, type_, candidates)
            # A name only the heuristics found is merged on similarity alone, as offline.
            if alias_of is not None and self._by_model(key):
                alias_of = alias_of if self._confirm(name, type_, alias_of) else None
            if alias_of is not None:
                self.graph.add_alias(self.kb.id, key, type_, alias_of)
                ids[(key, type_)] = alias_of
                continue
            entity_id = self.graph.create_entity(
                self.kb.id, key=key, type_=type_, name=name, attributes={}
            )
            self._fresh.append((entity_id, type_, vector))
            self._display[entity_id] = name
            ids[(key, type_)] = entity_id
        return ids

    def _confirm(self, name: str, type_: str, entity_id: int) -> bool:
        """With an LLM, confirm a similarity merge (one fast call); offline, trust similarity."""
        llm = self.llm
        if llm is None:
            return True
        other = next(iter(self.graph.entities([entity_id])), None)
        if other is None:
            return False
        variables = {
            "name_a": name,
            "type_a": type_,
            "description_a": "",
            "name_b": other.name,
            "type_b": other.type,
            "description_b": other.description or "(none)",
        }

        def call() -> Any:
            # One call through call_many, so that a cancel abandons it like any other.
            (answer,) = self._call_many(llm, SAME_ENTITY, [variables])
            if isinstance(answer, LLMError):
                raise answer
            return answer

        try:
            verdict = self._guard(call)
        except LLMError as exc:
            if _unreachable(exc):
                raise  # waited out by the guard already, past the longest pause: stop
            # An unreadable verdict, or a request the endpoint failed, leaves the similarity
            # decision standing.
            self.rejections.add("same_entity", _fallback_reason(exc))
            return True
        return bool(verdict.same)

    def summarize_long(self, entity_ids: Sequence[int]) -> None:
        """With an LLM, summarize entity descriptions that grew past the limit."""
        llm = self.llm
        if llm is None:
            return
        from ..llm.retry import EndpointUnreachableError

        long = self.graph.long_descriptions(entity_ids)
        if not long:
            return
        variables = [
            {"name": name, "type": type_, "descriptions": "\n".join(parts)}
            for name, type_, parts in long.values()
        ]

        def call() -> list[Any]:
            out = self._call_many(llm, SUMMARIZE_DESCRIPTION, variables)
            for answer in out:  # a lost endpoint is waited out, not taken as "no summary"
                if isinstance(answer, EndpointUnreachableError):
                    raise answer
            return out

        answers = self._guard(call)
        for entity_id, answer in zip(long, answers, strict=True):
            # A failed or unusable summary keeps the merged descriptions as they are.
            if isinstance(answer, LLMError):
                self.rejections.add("summarize_description", _fallback_reason(answer))
                continue
            text = " ".join(answer.description.split())
            if not text or len(text) > _MAX_SUMMARY_CHARS:
                self.rejections.add("summarize_description", "empty or overlong summary")
                continue
            self.graph.set_description(entity_id, text)

    def _call_many(
        self, llm: LLM, role: Prompt[T], variables: Sequence[dict[str, Any]]
    ) -> list[T | LLMError]:
        """`llm.call_many` that a cancel abandons at once (BuildCancelled), in flight or not."""
        if self._cancel is not None and self._cancel.is_set():
            raise BuildCancelled
        try:
            return list(llm.call_many(role, variables, self.rejections, cancel=self._cancel))
        except CallsCancelled:
            raise BuildCancelled from None

    def _stored_candidates(self, vectors: np.ndarray) -> list[list[tuple[int, str, np.ndarray]]]:
        """Entities of earlier builds near each name: one Milvus search, one embedding call."""
        hits = self.vectors.search_dense(
            self.kb.dimension, vectors, kbs=[self.kb.id], kinds=("entity",), limit=3
        )
        entity_ids = sorted({h.ref_id for row in hits for h in row})
        known = {e.id: e for e in self.graph.entities(entity_ids)}
        missing = [i for i in entity_ids if i in known and i not in self._names]
        if missing:
            for entity_id, vec in zip(
                missing,
                self._guard(lambda: self.embedder.embed([known[i].name for i in missing])),
                strict=True,
            ):
                self._names[entity_id] = vec
        return [
            [
                (h.ref_id, known[h.ref_id].type, self._names[h.ref_id])
                for h in row
                if h.ref_id in known
            ]
            for row in hits
        ]

    def _closest(
        self,
        name: str,
        vector: np.ndarray,
        type_: str,
        candidates: list[tuple[int, str, np.ndarray]],
    ) -> int | None:
        if type_ in _NO_SIMILARITY_TYPES or _DIGIT.search(name):
            return None
        best, best_score = None, 0.0
        for entity_id, other_type, other in candidates:
            if other_type != type_:
                continue
            other_name = self._name_of(entity_id)
            if _DIGIT.search(other_name):
                continue
            same_script = bool(CJK.search(name)) == bool(CJK.search(other_name))
            needed = SAME_SCRIPT_SIMILARITY if same_script else ALIAS_SIMILARITY
            score = float(vector @ other)
            if score >= needed and score > best_score:
                best, best_score = entity_id, score
        return best

    def _name_of(self, entity_id: int) -> str:
        if entity_id not in self._display:
            found = self.graph.entities([entity_id])
            self._display[entity_id] = found[0].name if found else ""
        return self._display[entity_id]


def _type(value: str) -> str:
    return (value or "concept").strip().lower() or "concept"


def _unreachable(exc: BaseException) -> bool:
    from ..llm.retry import EndpointUnreachableError

    return isinstance(exc, EndpointUnreachableError)


_HTTP = re.compile(r"HTTP \d{3}")


def _fallback_reason(error: BaseException) -> str:
    """A short, countable reason a chunk's (or a merge's) LLM step fell back."""
    if isinstance(error, LLMOutputError):
        return "no usable output after one repair"
    if isinstance(error, LLMError):
        status = _HTTP.search(str(error))
        return f"request failed ({status.group(0)})" if status else "request failed"
    return f"extraction failed ({type(error).__name__})"
