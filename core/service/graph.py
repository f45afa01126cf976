"""The entity graph of a knowledge base ("增强知识图谱索引"): its counts, the view the graph page
draws, one entity with its relations and chunks, a K-hop neighbourhood, and the whole graph as
a GraphML or GEXF file."""

from __future__ import annotations

from collections.abc import Sequence

from ..choices import GraphFormat
from ..errors import NotFoundError, ZhixingError
from ..models.graph import (
    ChunkRef,
    EntityDetails,
    EntityRelation,
    GraphEdgeView,
    GraphNodeView,
    GraphStats,
    GraphView,
    NeighbourEdge,
    Neighbourhood,
    NeighbourNode,
)
from ..text.entity_names import normalize_entity_name
from .access import Access

__all__ = ["MAX_ENTITY_CHUNKS", "Graph"]

MAX_ENTITY_CHUNKS = 20  # chunks shown under one entity; the rest are counted


class Graph:
    def __init__(self, access: Access) -> None:
        self._access, self._graph = access, access.home.graph

    def stats(self, name: str) -> GraphStats:
        return self._graph.stats(self._access.kb(name).id)

    def file(self, name: str, fmt: GraphFormat | str) -> bytes:
        """The whole entity graph of a knowledge base as a GraphML or GEXF file (core/graph_file.py)."""
        from ..graph_file import graph_file

        kb = self._access.kb(name)
        entities, relations = self._graph.dump(kb.id)
        if not entities:
            raise ZhixingError(
                f"{kb.name!r} has no entity graph to export; build it with --mode graph"
                " (增强知识图谱索引) first."
            )
        sources = self._access.home.catalog.chunk_sources(kb.id)
        return graph_file(kb.name, entities, relations, GraphFormat.parse(fmt), documents=sources)

    def view(
        self,
        name: str,
        *,
        query: str = "",
        hops: int = 1,
        types: Sequence[str] = (),
        min_degree: int = 0,
        cap: int = 300,
    ) -> GraphView:
        """What the graph page draws: the `cap` best-connected entities of the given types and
        degree, or the `hops`-neighbourhood of the entity `query` names, with the relations
        among them (the page draws them: app/graph_html.py)."""
        kb = self._access.kb(name)
        stats = self._graph.stats(kb.id)
        graph = self._graph
        seeds = graph.find_entities(kb.id, normalize_entity_name(query)) if query.strip() else []
        left_out = 0
        if seeds:
            ids, _ = graph.neighbourhood(kb.id, seeds, hops, limit=cap)
            degree = graph.degrees(ids)
            kinds = {e.id: e.type for e in graph.entities(ids)}
            ids = [
                i
                for i in ids
                if i in seeds or ((not types or kinds[i] in types) and degree[i] >= min_degree)
            ]
        else:  # no search, or an unknown name: the whole graph (the page says which)
            ranked, total = graph.ranked_entities(
                kb.id, types=list(types), min_degree=min_degree, limit=cap
            )
            ids, left_out = [i for i, _ in ranked], total - len(ranked)
        degree = graph.degrees(ids)
        entities = {e.id: e for e in graph.entities(ids)}
        relations = graph.relations_among(list(entities))
        order = sorted(entities, key=lambda i: (i not in seeds, -degree[i], entities[i].name))
        return GraphView(
            nodes=tuple(
                GraphNodeView(i, e.name, e.type, degree[i], e.description)
                for i, e in ((i, entities[i]) for i in order)
            ),
            edges=tuple(
                GraphEdgeView(r.source, r.target, r.type, r.description) for r in relations
            ),
            left_out=left_out,
            seeds=tuple(seeds),
            entities=stats.entities,
            relations=stats.relations,
            types=tuple(stats.types),
        )

    def entity(self, name: str, entity_id: int) -> EntityDetails:
        """One entity of a knowledge base with its relations and the chunks that mention it."""
        kb = self._access.kb(name)
        if not self._graph.in_kb(kb.id, [entity_id]):
            raise NotFoundError(f"{kb.name!r} has no such entity.")
        (entity,) = self._graph.entities([entity_id])
        relations = self._graph.relations_of(entity.id)
        other = {r.id: r.target if r.source == entity.id else r.source for r in relations}
        names = {e.id: e.name for e in self._graph.entities(sorted(set(other.values())))}
        shown = entity.chunks[:MAX_ENTITY_CHUNKS]
        rows = self._access.home.catalog.chunks_by_id(shown)
        chunks = []
        for chunk_id in shown:
            c = rows.get(chunk_id)
            if c is None or c["kb_id"] != kb.id:
                continue
            titled = c["title"] and c["title"] != c["source"]
            chunks.append(
                ChunkRef(
                    chunk_id=chunk_id,
                    document=f"{c['title']} ({c['source']})" if titled else c["source"],
                    ordinal=c["ordinal"] + 1,
                    page=c["page_start"] or 0,
                    line=c["line_start"] or 0,
                    text=c["text"],
                )
            )
        return EntityDetails(
            id=entity.id,
            name=entity.name,
            type=entity.type,
            description=entity.description,
            aliases=tuple(entity.aliases),
            attributes=dict(entity.attributes),
            relations=tuple(
                EntityRelation(r.type, r.source == entity.id, names.get(other[r.id], "?"))
                for r in relations
            ),
            chunks=tuple(chunks),
            total_chunks=len(entity.chunks),
        )

    def neighbourhood(
        self, name: str, entity: str, *, hops: int = 1, limit: int = 60
    ) -> Neighbourhood:
        """The K-hop neighbourhood of an entity: nodes (with the chunks that mention them) and
        edges (`to_json` is the `graph --json` shape of docs/architecture.md §9)."""

        kb = self._access.kb(name)
        seeds = self._graph.find_entities(kb.id, normalize_entity_name(entity))
        if not seeds:
            raise NotFoundError(f"{name!r} has no entity named {entity!r}.")
        node_ids, edges = self._graph.neighbourhood(kb.id, seeds, hops, limit=limit)
        return Neighbourhood(
            nodes=[
                NeighbourNode(e.id, e.name, e.type, e.description, list(e.aliases), list(e.chunks))
                for e in self._graph.entities(node_ids)
            ],
            edges=[NeighbourEdge(r.source, r.target, r.type, r.weight) for r in edges],
        )
