"""A batch's extracted knowledge written into the entity graph (docs/architecture.md §4).

Every name of the batch is resolved at once to an entity: a known name or alias of the same
type, else a name close enough under the embedder to an entity of the same type (a model, where
one is set, confirms the merge), else a new entity. Then each chunk's mentions and relations are
recorded, and the descriptions that grew past the limit are summarized by the model.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..embed import Embedder
from ..errors import LLMError
from ..llm.boundary import Rejections
from ..llm.prompts import SAME_ENTITY, SUMMARIZE_DESCRIPTION
from ..llm.protocol import LLM
from ..llm.schemas import ChunkKnowledge
from ..models import KnowledgeBase
from ..store import VectorStore
from ..store.graph import GraphStore
from ..text.chinese import CJK
from ..text.entity_names import normalize_entity_name
from .model_calls import call_many, fallback_reason

__all__ = ["ALIAS_SIMILARITY", "SAME_SCRIPT_SIMILARITY", "GraphWriter"]

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


class GraphWriter:
    """The entity graph a build writes, batch by batch: it remembers the entities the build
    made (not yet in Milvus) and the name vectors it has fetched."""

    def __init__(
        self,
        kb: KnowledgeBase,
        graph: GraphStore,
        vectors: VectorStore,
        embedder: Embedder,
        llm: LLM | None,
        guard: Callable[[Callable[[], Any]], Any],
        cancel: threading.Event | None,
        rejections: Rejections,
    ) -> None:
        self.kb = kb
        self.graph = graph
        self.vectors = vectors
        self.embedder = embedder
        self.llm = llm
        self._guard = guard
        self._cancel = cancel
        self.rejections = rejections
        # Entities created during this build, not yet in Milvus: (id, type, name vector).
        self._fresh: list[tuple[int, str, np.ndarray]] = []
        self._names: dict[int, np.ndarray] = {}  # name vectors of entities from earlier builds
        self._ends: dict[str, int] = {}  # relation ends found among earlier entities
        self._display: dict[int, str] = {}  # entity id -> its name, for the similarity rules
        self._model_keys: set[str] | None = None  # beside the heuristics: the names the model wrote

    def _by_model(self, key: str) -> bool:
        """Whether the model named `key`: only its own names cost it a merge or summary call."""
        return self._model_keys is None or key in self._model_keys

    def write(
        self, chunks: Sequence[tuple[int, ChunkKnowledge]], model_keys: set[str] | None
    ) -> dict[int, str]:
        """Resolve every entity of the batch at once, then record mentions and relations;
        return the entities touched (id -> "", in the order they were), whose vectors change.

        `model_keys` are the names the model wrote beside the heuristics (None: all of them
        are the model's, or none is): only those cost a merge or a summary call."""
        self._model_keys = model_keys
        touched: dict[int, str] = {}
        wanted: dict[tuple[str, str], str] = {}
        for _, knowledge in chunks:
            for entity in knowledge.entities:
                name = " ".join(entity.name.split())
                if key := normalize_entity_name(name):
                    wanted.setdefault((key, _type(entity.type)), name)
        # A relation's end that is no entity of the batch is looked up under any type first,
        # and only made a new `concept` when it is known nowhere.
        keys = {key for key, _ in wanted}
        for _, knowledge in chunks:
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
        for chunk_id, knowledge in chunks:
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
                        chunk_id,
                        name,
                        entity.description.strip(),
                        dict(entity.attributes),
                    )
                local[key] = entity_id
                touched[entity_id] = ""
            for rel in knowledge.relations:
                pair: list[int | None] = []
                for end in (rel.source, rel.target):
                    name = " ".join(end.split())
                    key = normalize_entity_name(name)
                    found = local.get(key) or ends.get(key)
                    if found is not None and key not in local:
                        if found not in local.values():
                            self.graph.mention_entity(found, chunk_id, name, "", {})
                        local[key] = found
                        touched[found] = ""
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
                        chunk_id,
                        rel.description.strip(),
                    )
                )
        self.graph.refresh(touched, relations)
        # Only what the model named costs it a summary; the heuristics' entities merge their
        # descriptions as an offline build does.
        asked = {e for (key, _), e in ids.items() if self._by_model(key)}
        asked |= {e for key, e in self._ends.items() if self._by_model(key)}
        self.summarize_long([e for e in touched if e in asked])
        return touched

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
            (answer,) = call_many(llm, SAME_ENTITY, [variables], self.rejections, self._cancel)
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
            self.rejections.add("same_entity", fallback_reason(exc))
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
            out = call_many(llm, SUMMARIZE_DESCRIPTION, variables, self.rejections, self._cancel)
            for answer in out:  # a lost endpoint is waited out, not taken as "no summary"
                if isinstance(answer, EndpointUnreachableError):
                    raise answer
            return out

        answers = self._guard(call)
        for entity_id, answer in zip(long, answers, strict=True):
            # A failed or unusable summary keeps the merged descriptions as they are.
            if isinstance(answer, LLMError):
                self.rejections.add("summarize_description", fallback_reason(answer))
                continue
            text = " ".join(answer.description.split())
            if not text or len(text) > _MAX_SUMMARY_CHARS:
                self.rejections.add("summarize_description", "empty or overlong summary")
                continue
            self.graph.set_description(entity_id, text)

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
