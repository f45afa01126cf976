"""What the MCP tools of `zhixing mcp` take and give back, as the schemas a client reads.

Each tool's arguments carry a description and their bounds (the client sees `minimum` and
`maximum`; a value outside them is refused in one sentence, never clamped), and each result is
a model here, published as the tool's output schema and checked by the SDK before it is sent.
The shapes are the CLI's `--json` ones (docs/architecture.md §9), with one addition: every hit
and citation carries `uri`, the resource that opens its chunk (`zhixing://chunks/{id}`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

__all__ = [
    "MAX_HOPS",
    "MAX_ROUNDS",
    "MAX_TOP_K",
    "Answer",
    "Entity",
    "Hits",
    "Hops",
    "KnowledgeBaseNames",
    "KnowledgeBases",
    "Neighbourhood",
    "Rounds",
    "TopK",
    "chunk_uri",
    "document_uri",
]

MAX_TOP_K = 50
MAX_ROUNDS = 5
MAX_HOPS = 3
_TEXT = 4000  # a query or a question
# Names take no maximum here: a name too long to exist is refused as a missing one is, in the
# same words, so no bound tells a caller which names might exist.

KnowledgeBaseNames = Annotated[
    list[str] | None,
    Field(
        description="Names from list_knowledge_bases; leave out (or []) for every knowledge base"
        " this user may read.",
        max_length=100,
    ),
]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many hits to return at most.")]
Rounds = Annotated[
    int, Field(ge=1, le=MAX_ROUNDS, description="Search rounds before answering (more: slower).")
]
Hops = Annotated[
    int, Field(ge=1, le=MAX_HOPS, description="How many relations away from the entity to go.")
]
Query = Annotated[
    str, Field(min_length=1, max_length=_TEXT, description="What to search for, in any language.")
]
Question = Annotated[
    str, Field(min_length=1, max_length=_TEXT, description="The question, in any language.")
]
KnowledgeBase = Annotated[str, Field(description="A name from list_knowledge_bases.")]
Entity = Annotated[
    str,
    Field(
        description="An entity's name or alias (any case, any language).",
    ),
]


def chunk_uri(chunk_id: int) -> str:
    return f"zhixing://chunks/{chunk_id}"


def document_uri(document_id: int) -> str:
    return f"zhixing://documents/{document_id}"


class KnowledgeBaseRow(BaseModel):
    name: str
    mode: str = Field(description="graph (with an entity graph) or index")
    description: str
    tags: list[str]
    documents: int
    chunks: int


class KnowledgeBases(BaseModel):
    knowledge_bases: list[KnowledgeBaseRow]


class Hit(BaseModel):
    score: float = Field(description="Reciprocal-rank-fusion score; higher is better.")
    chunk_id: int
    knowledge_base: str
    document: str = Field(description="The document's source (file name or record id).")
    title: str
    page: int
    line_start: int
    line_end: int
    ocr: bool = Field(description="Read by OCR from a scan: words may be misread.")
    heading_path: list[str]
    text: str
    strategies: dict[str, int] = Field(description="The rank each search strategy gave it.")
    uri: str = Field(description="The chunk as a resource: read it to open the citation.")


class Hits(BaseModel):
    hits: list[Hit]


class Citation(BaseModel):
    n: int = Field(description="The [n] marker the answer uses for it.")
    chunk_id: int
    document: str
    page: int
    text: str = Field(description="What the answer cites it for.")
    chunk_text: str
    highlights: list[tuple[int, int]] = Field(
        description="(start, end) offsets in chunk_text of the quoted sentences."
    )
    ocr: bool
    uri: str


class Round(BaseModel):
    round: int
    queries: list[str]
    hits_by_strategy: dict[str, int]
    new_evidence: int
    sufficient: bool
    missing: list[str]


class Answer(BaseModel):
    answer: str = Field(description="The answer, with [n] markers for its citations.")
    found: bool = Field(description="false: the knowledge bases do not say.")
    citations: list[Citation]
    method: str = Field(description="llm, or extractive (quoted from the hits)")
    note: str
    rounds: list[Round]


class Node(BaseModel):
    id: int
    name: str
    type: str
    description: str
    aliases: list[str]
    chunks: list[int] = Field(description="Chunks that mention it (zhixing://chunks/{id}).")


class Edge(BaseModel):
    source: int
    target: int
    type: str
    weight: float


class Neighbourhood(BaseModel):
    nodes: list[Node]
    edges: list[Edge]


def with_uris(answer: dict[str, Any]) -> dict[str, Any]:
    """An `ask --json` answer with each citation's chunk resource."""
    cited = [{**c, "uri": chunk_uri(c["chunk_id"])} for c in answer["citations"]]
    return {**answer, "citations": cited}
