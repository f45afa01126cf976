"""图谱: one knowledge base's entity graph, filtered and capped, and the details of a node."""

from __future__ import annotations

import zlib

import streamlit as st

from app.services import session_service
from app.strings import graph as T
from app.widgets import empty_state, inert, kb_names
from core.enrich import normalize_entity_name
from core.models import KnowledgeBase
from core.service import KnowledgeService
from core.store.graph import GraphStore, StoredEntity
from core.viz import GraphEdge, GraphNode, render_graph

MAX_CHUNKS = 20  # chunks listed under one node; the rest are counted


def filters(kb_id: int, types: list[str]) -> tuple[list[str], int, int]:
    left, middle, right = st.columns(3)
    chosen = left.multiselect(T.TYPES, types, help=T.TYPES_HELP, key=f"graph-types-{kb_id}")
    min_degree = middle.number_input(
        T.MIN_DEGREE, min_value=0, value=0, step=1, help=T.MIN_DEGREE_HELP, key="graph-min-degree"
    )
    cap = right.number_input(
        T.CAP, min_value=10, max_value=5000, value=300, step=50, help=T.CAP_HELP, key="graph-cap"
    )
    return chosen, int(min_degree), int(cap)


def shown_ids(
    graph: GraphStore,
    kb: KnowledgeBase,
    seeds: list[int],
    hops: int,
    types: list[str],
    min_degree: int,
    cap: int,
) -> tuple[list[int], int]:
    """The entity ids to draw and how many matching ones the cap left out."""
    if not seeds:
        ranked, total = graph.ranked_entities(kb.id, types=types, min_degree=min_degree, limit=cap)
        return [entity_id for entity_id, _ in ranked], total - len(ranked)
    ids, _ = graph.neighbourhood(kb.id, seeds, hops, limit=cap)
    degree = graph.degrees(ids)
    kinds = {e.id: e.type for e in graph.entities(ids)}
    keep = [
        i
        for i in ids
        if i in seeds or ((not types or kinds[i] in types) and degree[i] >= min_degree)
    ]
    return keep, 0


def details(service: KnowledgeService, entity: StoredEntity) -> None:
    graph = service.graph
    # Names and descriptions come from documents: Markdown, but inert (app.widgets.inert).
    st.markdown(inert(f"### {entity.name}"))
    st.markdown(inert(f"**{T.NODE_TYPE}:** {entity.type}"))
    st.markdown(inert(f"**{T.NODE_DESCRIPTION}:** {entity.description or T.NONE}"))
    st.markdown(inert(f"**{T.NODE_ALIASES}:** {'、'.join(entity.aliases) or T.NONE}"))
    st.markdown(f"**{T.NODE_ATTRIBUTES}:**" + ("" if entity.attributes else f" {T.NONE}"))
    if entity.attributes:
        st.json(entity.attributes)
    st.markdown(f"#### {T.RELATIONS}")
    relations = graph.relations_of(entity.id)
    other = {r.id: r.target if r.source == entity.id else r.source for r in relations}
    names = {e.id: e.name for e in graph.entities(sorted(set(other.values())))}
    if relations:
        rows = [
            {
                T.COL_RELATION: r.type,
                T.COL_DIRECTION: T.OUTGOING if r.source == entity.id else T.INCOMING,
                T.COL_OTHER: names.get(other[r.id], "?"),
            }
            for r in relations
        ]
        st.dataframe(rows, hide_index=True)
    else:
        st.caption(T.NO_RELATIONS)
    st.markdown(f"#### {T.CHUNKS}")
    if len(entity.chunks) > MAX_CHUNKS:
        st.caption(T.CHUNKS_MORE.format(total=len(entity.chunks), shown=MAX_CHUNKS))
    chunks = service.catalog.chunks_by_id(entity.chunks[:MAX_CHUNKS])
    for chunk_id in entity.chunks[:MAX_CHUNKS]:
        c = chunks.get(chunk_id)
        if c is None:
            continue
        document = c["title"] and c["title"] != c["source"] and f"{c['title']} ({c['source']})"
        where = dict(document=document or c["source"], ordinal=c["ordinal"] + 1)
        label = (
            T.CHUNK_LABEL.format(page=c["page_start"], **where)
            if c["page_start"]
            else T.CHUNK_LABEL_NO_PAGE.format(line=c["line_start"], **where)
        )
        with st.expander(inert(label)):
            st.markdown(inert(c["text"]))


service = session_service()
st.title(T.TITLE)
if not empty_state(service):
    st.stop()

name = st.selectbox(T.KB, kb_names(service), key="graph-kb")
kb = service.kb(name)
if kb.mode != "graph":
    st.info(inert(T.INDEX_MODE.format(name=name)))
    st.stop()
stats = service.graph_stats(name)
if not stats["entities"]:
    st.info(inert(T.NO_ENTITIES.format(name=name)))
    st.stop()

graph = service.graph
types, min_degree, cap = filters(kb.id, list(stats["types"]))
search_col, hops_col = st.columns([3, 1])
query = search_col.text_input(T.SEARCH, placeholder=T.SEARCH_PLACEHOLDER, key="graph-search")
hops = hops_col.slider(T.HOPS, min_value=1, max_value=3, value=1, key="graph-hops")
seeds = graph.find_entities(kb.id, normalize_entity_name(query)) if query.strip() else []
if query.strip() and not seeds:
    st.warning(inert(T.UNKNOWN_ENTITY.format(kb=name, name=query.strip())))

ids, left_out = shown_ids(graph, kb, seeds, hops, types, min_degree, cap)
if not ids:
    st.info(T.NOTHING_SHOWN)
    st.stop()
degree = graph.degrees(ids)
entities = {e.id: e for e in graph.entities(ids)}
relations = graph.relations_among(ids)
rendered = render_graph(
    [GraphNode(i, e.name, e.type, degree[i], e.description) for i, e in entities.items()],
    [GraphEdge(r.source, r.target, r.type, r.description) for r in relations],
    highlight=seeds,
)
if seeds:
    st.caption(inert(T.NEIGHBOURHOOD.format(name=entities[seeds[0]].name, hops=hops)))
st.caption(
    T.STATS.format(
        entities=stats["entities"],
        relations=stats["relations"],
        shown=len(entities),
        edges=len(relations),
    )
)
if left_out:
    st.info(T.LEFT_OUT.format(shown=len(entities), left=left_out))
# st.iframe replaces st.components.v1.html, which Streamlit 1.67 marks for removal.
st.iframe(rendered.html, height=650)

st.subheader(T.NODE)
order = sorted(entities, key=lambda i: (i not in seeds, -degree[i], entities[i].name))
picked = st.selectbox(
    T.NODE_PICK,
    order,
    format_func=lambda i: T.NODE_OPTION.format(
        name=entities[i].name, type=entities[i].type, degree=degree[i]
    ),
    # A new search or filter is a new list; a fresh key starts it on its first entry (the seed).
    key=f"graph-node-{kb.id}-{zlib.crc32(repr(order).encode())}",
)
details(service, entities[picked])
