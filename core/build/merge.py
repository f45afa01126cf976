"""One chunk's graph knowledge with a model: the model's, plus what the offline extractor found.

Why: a weak model names fewer things than the built-in heuristics. Qwen2.5-Coder-0.5B gave 13
entities and 10 relations for two short documents that the offline build turns into 17 and 21
(issue 34), so a graph built with a model held less than one built without. With a model, the
offline extractor (core/extract, a few milliseconds a chunk) runs beside it and its entities and
relations are added to the model's; a chunk whose reply is unusable keeps the offline ones alone.

The model wins where both name the same thing: same normalized name (the key the graph merges
entities by), whatever type each gave. Names that differ but mean one thing ("SQL注入" and "SQL
Injection") are left to the graph's own alias and similarity resolution
(core/build/graph_writer.py `_resolve_all`), as they are between chunks. Questions stay the model's:
offline questions lowered retrieval on every set measured (issue 15).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..llm.schemas import ChunkKnowledge, ExtractedEntity, ExtractedRelation
from ..text.entity_names import normalize_entity_name

__all__ = ["known_types", "merge_knowledge", "model_names"]


def merge_knowledge(
    model: ChunkKnowledge, offline: ChunkKnowledge, types: Mapping[str, str] | None = None
) -> ChunkKnowledge:
    """Return the model's knowledge of a chunk with the offline entities and relations it missed.

    Both are cleaned already (core/build/sanitize.py), so every type is in the vocabulary.
    `types` maps a normalized name to the type it already has (`known_types`: the model's in
    this batch, else the graph's): an offline entity of that name takes it, so that one thing is
    one entity, since the graph resolves names within a type.
    """
    types = types or {}
    named = {normalize_entity_name(e.name) for e in model.entities}
    added: list[ExtractedEntity] = []
    for entity in offline.entities:
        key = normalize_entity_name(entity.name)
        if key in named:
            continue  # the model's entity of that name wins, description and type
        named.add(key)
        if key in types and types[key] != entity.type:
            entity = entity.model_copy(update={"type": types[key]})
        added.append(entity)
    relations = list(model.relations)
    seen = {_relation_key(r) for r in relations}
    for relation in offline.relations:
        if (pair := _relation_key(relation)) not in seen:
            seen.add(pair)
            relations.append(relation)
    return ChunkKnowledge(
        questions=list(model.questions),
        entities=[*model.entities, *added],
        relations=relations,
    )


def known_types(
    chunks: Iterable[tuple[Any, ChunkKnowledge | None, ChunkKnowledge | None]],
    known: Callable[[str], str | None],
) -> dict[str, str]:
    """Return the type each offline name already has: the model's in this batch (`chunks` are
    (item, model's knowledge, offline knowledge)), else `known(key)`, an earlier build's."""
    chunks = list(chunks)
    types: dict[str, str] = {}
    for _, model, _ in chunks:
        for entity in model.entities if model else ():
            types.setdefault(normalize_entity_name(entity.name), entity.type)
    keys = {
        normalize_entity_name(e.name) for _, _, off in chunks for e in (off.entities if off else ())
    }
    for key in sorted(keys - types.keys()):
        if (type_ := known(key)) is not None:
            types[key] = type_
    return types


def model_names(knowledge: Iterable[ChunkKnowledge | None]) -> set[str]:
    """Return the normalized names the model wrote (entities and relation ends): only these
    cost it a `same_entity` or `summarize_description` call; the heuristics' names are merged
    on similarity and their descriptions cut, as in an offline build."""
    names: set[str] = set()
    for k in knowledge:
        if k is not None:
            names.update(normalize_entity_name(e.name) for e in k.entities)
            names.update(
                normalize_entity_name(n) for r in k.relations for n in (r.source, r.target)
            )
    return names


def _relation_key(relation: ExtractedRelation) -> tuple[str, str, str]:
    return (
        normalize_entity_name(relation.source),
        normalize_entity_name(relation.target),
        relation.type,
    )
