"""What of one chunk's extracted knowledge may enter the index and the graph.

A reply can be valid JSON of the right shape and still unusable: an empty or whitespace name, a
3,000-character "question", a line range past the chunk, a relation from an entity to itself or
to a name the chunk never mentions, forty relations of one pair. `clean_knowledge` keeps what a
reader of the chunk would accept and names each thing it drops, so the build summary can count
them. Text is kept as text: HTML or script in a name is stored as written and escaped where it
is shown, never interpreted.
"""

from __future__ import annotations

import re

from ..llm.schemas import (
    ENTITY_TYPES,
    ChunkKnowledge,
    ExtractedEntity,
    ExtractedRelation,
    IndexQuestion,
)
from ..text.entity_names import normalize_entity_name

__all__ = ["ENTITY_TYPES", "clean_knowledge"]

# Types a model writes for the vocabulary's own (core/llm/schemas.py ENTITY_TYPES): Chinese
# names and common English near-synonyms. Anything else becomes "other", so a graph has at most
# len(ENTITY_TYPES) types however the model names them.
_TYPE_SYNONYMS = {
    **dict.fromkeys(["概念", "基本概念", "术语", "term", "principle"], "concept"),
    **dict.fromkeys(["漏洞", "安全漏洞", "攻击", "attack", "threat"], "vulnerability"),
    **dict.fromkeys(["弱点", "缺陷", "cwe"], "weakness"),
    **dict.fromkeys(
        [
            "控制",
            "控制措施",
            "措施",
            "安全措施",
            "要求",
            "requirement",
            "countermeasure",
            "mitigation",
        ],
        "control",
    ),
    **dict.fromkeys(["标准", "规范", "specification"], "standard"),
    **dict.fromkeys(["条款", "章节", "section"], "clause"),
    **dict.fromkeys(
        ["技术", "协议", "算法", "protocol", "algorithm", "language", "framework", "library"],
        "technology",
    ),
    **dict.fromkeys(["产品", "工具", "软件", "software", "tool"], "product"),
    **dict.fromkeys(["组织", "机构", "company", "organisation"], "organization"),
    **dict.fromkeys(["人物", "人", "people"], "person"),
    **dict.fromkeys(["文件", "文档", "document", "file"], "artifact"),
    "其他": "other",
}
# Bounds on one chunk's knowledge: a chunk is at most a few hundred words, so anything past
# these is a model repeating itself or dumping text into a field.
MAX_QUESTIONS = 20
MAX_QUESTION_CHARS = 300
MAX_ENTITIES = 40
MAX_RELATIONS = 60
MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 1000
MAX_TYPE_CHARS = 40
_SLUG = re.compile(r"^[\w\- ]+$")


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def clean_knowledge(
    knowledge: ChunkKnowledge, chunk_text: str, mode: str
) -> tuple[ChunkKnowledge, list[str]]:
    """The usable part of `knowledge` for a chunk, and a reason for everything dropped."""
    rejected: list[str] = []
    lines = max(len(chunk_text.splitlines()), 1)
    questions = _questions(knowledge.questions, lines, rejected)
    if mode != "graph":
        return ChunkKnowledge(questions=questions), rejected
    entities = _entities(knowledge.entities, rejected)
    relations = _relations(knowledge.relations, entities, chunk_text, rejected)
    return ChunkKnowledge(questions=questions, entities=entities, relations=relations), rejected


def _questions(items: list[IndexQuestion], lines: int, rejected: list[str]) -> list[IndexQuestion]:
    out: list[IndexQuestion] = []
    seen: set[str] = set()
    for q in items:
        text = _flat(q.question)
        if not text:
            rejected.append("empty question")
        elif len(text) > MAX_QUESTION_CHARS:
            rejected.append(f"question over {MAX_QUESTION_CHARS} characters")
        elif text.casefold() in seen:
            rejected.append("repeated question")
        elif len(out) >= MAX_QUESTIONS:
            rejected.append(f"more than {MAX_QUESTIONS} questions")
        else:
            seen.add(text.casefold())
            start, end = q.line_start, q.line_end
            if not (1 <= start <= lines and 1 <= end <= lines and start <= end):
                rejected.append("line range outside the chunk (repaired)")
                start, end = _repair_range(start, end, lines)
            out.append(IndexQuestion(question=text, line_start=start, line_end=end))
    return out


def _repair_range(start: int, end: int, lines: int) -> tuple[int, int]:
    """Clamp a model's line range into the chunk and put it in order."""
    start = min(max(int(start), 1), lines)
    end = min(max(int(end), 1), lines)
    return (start, end) if start <= end else (end, start)


def _entity_type(value: str, rejected: list[str]) -> str:
    """The vocabulary's type for what the model wrote; "other" for anything it cannot name."""
    type_ = "_".join(_flat(value).lower().split()) or "concept"
    if type_ in ENTITY_TYPES:
        return type_
    singular = type_.removesuffix("s")
    mapped = _TYPE_SYNONYMS.get(type_) or _TYPE_SYNONYMS.get(singular)
    if mapped is None and singular in ENTITY_TYPES:
        mapped = singular
    if mapped is None:
        rejected.append("entity type outside the vocabulary (made 'other')")
    return mapped or "other"


def _entities(items: list[ExtractedEntity], rejected: list[str]) -> list[ExtractedEntity]:
    out: list[ExtractedEntity] = []
    for entity in items:
        name = _flat(entity.name)
        if not normalize_entity_name(name):
            rejected.append("entity with an empty name")
            continue
        if len(name) > MAX_NAME_CHARS:
            rejected.append(f"entity name over {MAX_NAME_CHARS} characters")
            continue
        if len(out) >= MAX_ENTITIES:
            rejected.append(f"more than {MAX_ENTITIES} entities")
            break
        description = entity.description.strip()
        if len(description) > MAX_DESCRIPTION_CHARS:
            rejected.append(f"entity description over {MAX_DESCRIPTION_CHARS} characters (cut)")
            description = description[:MAX_DESCRIPTION_CHARS]
        attributes = {
            _flat(k)[:60]: _flat(v)[:200]
            for k, v in list(entity.attributes.items())[:20]
            if _flat(k) and _flat(v)
        }
        out.append(
            ExtractedEntity(
                name=name,
                type=_entity_type(entity.type, rejected),
                description=description,
                attributes=attributes,
            )
        )
    return out


def _relations(
    items: list[ExtractedRelation],
    entities: list[ExtractedEntity],
    chunk_text: str,
    rejected: list[str],
) -> list[ExtractedRelation]:
    """Relations between two different named things the chunk speaks of: an end must be one of
    the chunk's entities or a name written in the chunk (then it may become an entity)."""
    known = {normalize_entity_name(e.name) for e in entities}
    text = normalize_entity_name(chunk_text)
    out: list[ExtractedRelation] = []
    seen: set[tuple[str, str, str]] = set()
    for rel in items:
        source, target = _flat(rel.source), _flat(rel.target)
        keys = [normalize_entity_name(source), normalize_entity_name(target)]
        if not all(keys):
            rejected.append("relation with an empty end")
            continue
        if any(len(end) > MAX_NAME_CHARS for end in (source, target)):
            rejected.append(f"relation end over {MAX_NAME_CHARS} characters")
            continue
        if keys[0] == keys[1]:
            rejected.append("relation from an entity to itself")
            continue
        if any(key not in known and key not in text for key in keys):
            rejected.append("relation end named nowhere in the chunk")
            continue
        type_ = "_".join(_flat(rel.type).lower().split()) or "related_to"
        if len(type_) > MAX_TYPE_CHARS or not _SLUG.match(type_):
            rejected.append("unreadable relation type (made 'related_to')")
            type_ = "related_to"
        if (keys[0], keys[1], type_) in seen:
            rejected.append("repeated relation")
            continue
        if len(out) >= MAX_RELATIONS:
            rejected.append(f"more than {MAX_RELATIONS} relations")
            break
        seen.add((keys[0], keys[1], type_))
        description = rel.description.strip()[:MAX_DESCRIPTION_CHARS]
        out.append(
            ExtractedRelation(source=source, target=target, type=type_, description=description)
        )
    return out
