"""The entity graph's records as the service hands them out: one entity with its relations and
chunks, the graph page's view, a K-hop neighbourhood, the counts (part of core.models)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "ChunkRef",
    "EntityDetails",
    "EntityRelation",
    "GraphEdgeView",
    "GraphNodeView",
    "GraphStats",
    "GraphView",
    "NeighbourEdge",
    "NeighbourNode",
    "Neighbourhood",
]


@dataclass(frozen=True)
class EntityRelation:
    type: str
    outgoing: bool  # from this entity to `other`
    other: str  # the other end's name


@dataclass(frozen=True)
class ChunkRef:
    """Where an entity is mentioned: a chunk, its document and position, and its text."""

    chunk_id: int
    document: str  # "title (source)", or the source when the title says nothing more
    ordinal: int  # 1-based chunk number within the document
    page: int
    line: int
    text: str


@dataclass(frozen=True)
class EntityDetails:
    id: int
    name: str
    type: str
    description: str
    aliases: tuple[str, ...]
    attributes: dict[str, Any]
    relations: tuple[EntityRelation, ...]
    chunks: tuple[ChunkRef, ...]  # the first few
    total_chunks: int


@dataclass(frozen=True)
class GraphNodeView:
    id: int
    name: str
    type: str
    degree: int = 0
    description: str = ""


@dataclass(frozen=True)
class GraphEdgeView:
    source: int
    target: int
    type: str
    description: str = ""


@dataclass(frozen=True)
class GraphView:
    """What the graph page draws (app/graph_html.py renders it): the nodes shown (ranked), the
    relations among them, how many matching nodes the cap left out, and the searched entities
    (`seeds`)."""

    nodes: tuple[GraphNodeView, ...]
    edges: tuple[GraphEdgeView, ...]
    left_out: int
    seeds: tuple[int, ...]
    entities: int  # in the whole knowledge base
    relations: int
    types: tuple[str, ...]  # every entity type of the knowledge base


@dataclass(frozen=True)
class GraphStats:
    """A knowledge base's entity graph in numbers (`graph --json` without an entity)."""

    entities: int
    relations: int
    types: dict[str, int]  # entity type -> entities, most first

    def to_json(self) -> dict[str, Any]:
        return {"entities": self.entities, "relations": self.relations, "types": dict(self.types)}


@dataclass(frozen=True)
class NeighbourNode:
    id: int
    name: str
    type: str
    description: str
    aliases: list[str]
    chunks: list[int]  # the chunks that mention it


@dataclass(frozen=True)
class NeighbourEdge:
    source: int
    target: int
    type: str
    weight: float


@dataclass(frozen=True)
class Neighbourhood:
    """An entity's K-hop neighbourhood (`graph NAME ENTITY --json`, docs/architecture.md §9)."""

    nodes: list[NeighbourNode]
    edges: list[NeighbourEdge]

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [asdict(n) for n in self.nodes], "edges": [asdict(e) for e in self.edges]}
