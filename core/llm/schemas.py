"""Output schemas of the LLM roles (pydantic), shared by the LLM path and the offline heuristics.

`ChunkKnowledge` is what one call per chunk returns in both build modes (docs/architecture.md §4): the question
index, and in `graph` mode the entities and relations too. Line numbers are 1-based and relative
to the chunk text as shown to the model (each line prefixed with its number).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

__all__ = [
    "ENTITY_TYPES",
    "ChunkKnowledge",
    "ExtractedEntity",
    "ExtractedRelation",
    "IndexQuestion",
]

# What a chunk's extraction may hold in the schema sent (core/llm/structured.py bounds the rest). A
# 0.5B model under llama.cpp's grammar fills what the grammar allows: with 24 entities, 24
# relations and 400-character descriptions it wrote 2,700 tokens (its limit, cut) for a
# 7-line chunk, 273 s on one thread, where a description of one or two sentences and a dozen
# names are what a chunk holds (issue 34).
CHUNK_NAMES = 12  # entities, and relations
DESCRIPTION_CHARS = 200  # one or two sentences
NAME_CHARS = 80
QUESTION_CHARS = 200
ATTRIBUTES = 4

# The closed vocabulary of entity types, the same for Chinese and English documents. It is in the
# JSON schema as an enum, so a server that enforces the schema by grammar (llama.cpp, vLLM) keeps
# the model to it; a reply from one that does not is mapped onto it by core/build/sanitize.py.
# A 0.5B model left free wrote 17 types for 45 entities (concept, 概念, 基本概念, credits, …).
ENTITY_TYPES = (
    "concept",
    "vulnerability",
    "weakness",
    "control",
    "standard",
    "clause",
    "technology",
    "product",
    "organization",
    "person",
    "artifact",
    "other",
)


class IndexQuestion(BaseModel):
    """A context-free question the chunk answers, with the lines that answer it."""

    question: str = Field(
        description="A self-contained question; name the standard, product or language, never 'this document'.",
        json_schema_extra={"maxLength": QUESTION_CHARS},
    )
    line_start: int = Field(description="First line (1-based) of the chunk that answers it.")
    line_end: int = Field(description="Last line (1-based, inclusive) that answers it.")


class ExtractedEntity(BaseModel):
    """A named thing the chunk talks about: a concept, vulnerability, control, standard..."""

    name: str = Field(
        description="The entity's name as written, e.g. 'SQL注入', 'CWE-79', 'GB/T 34944-2017'.",
        json_schema_extra={"maxLength": NAME_CHARS},
    )
    # A str, not a Literal: an off-list type from a server without grammar is mapped, not a
    # reason to drop the whole entity; the enum reaches the server through the JSON schema.
    type: str = Field(
        description=f"One of: {', '.join(ENTITY_TYPES)}.",
        json_schema_extra={"enum": list(ENTITY_TYPES)},
    )
    description: str = Field(
        default="",
        description="One or two sentences, from the chunk only.",
        json_schema_extra={"maxLength": DESCRIPTION_CHARS},
    )
    attributes: dict[str, str] = Field(
        default_factory=dict,
        description="Short facts as key/value pairs, e.g. key 'level', value 'L2'.",
        json_schema_extra=lambda schema: _as_pairs(schema),
    )

    @field_validator("attributes", mode="before")
    @classmethod
    def _from_pairs(cls, value: Any) -> Any:
        """The attributes as the schema sent them (a list of key/value pairs), or as a dict."""
        if isinstance(value, list):
            return {
                str(p.get("key", "")): str(p.get("value", ""))
                for p in value
                if isinstance(p, dict) and str(p.get("key", "")).strip()
            }
        return value


def _as_pairs(schema: dict[str, Any]) -> None:
    """Send the attributes as at most `ATTRIBUTES` key/value pairs: llama.cpp's grammar bounds
    a list's items but not an object's keys, and a model may add keys until its limit."""
    description = schema.get("description", "")
    schema.clear()
    pair = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "maxLength": 40},
            "value": {"type": "string", "maxLength": 120},
        },
    }
    schema.update(
        {"type": "array", "items": pair, "maxItems": ATTRIBUTES, "description": description}
    )


class ExtractedRelation(BaseModel):
    """A relation the chunk states between two of its entities."""

    source: str = Field(
        description="Name of the source entity (as in `entities`).",
        json_schema_extra={"maxLength": NAME_CHARS},
    )
    target: str = Field(
        description="Name of the target entity (as in `entities`).",
        json_schema_extra={"maxLength": NAME_CHARS},
    )
    type: str = Field(
        description="A short verb phrase in snake_case, e.g. is_a, part_of, includes, causes, prevents, requires, related_to."
    )
    description: str = Field(
        default="",
        description="One sentence, from the chunk only.",
        json_schema_extra={"maxLength": DESCRIPTION_CHARS},
    )


class ChunkKnowledge(BaseModel):
    """What one chunk yields: its question index and, in graph mode, its entities and relations."""

    questions: list[IndexQuestion] = Field(
        default_factory=list, description="5 to 12 context-free questions the chunk answers."
    )
    # The bounds below are sent only (core/llm/structured.py): a chunk names at most about this
    # many things, and a grammar then cannot let a model list on until its token limit.
    entities: list[ExtractedEntity] = Field(
        default_factory=list,
        description="The chunk's entities; empty in index mode.",
        json_schema_extra={"maxItems": CHUNK_NAMES},
    )
    relations: list[ExtractedRelation] = Field(
        default_factory=list,
        description="Relations between those entities; empty in index mode.",
        json_schema_extra={"maxItems": CHUNK_NAMES},
    )
