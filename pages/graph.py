"""图谱: one knowledge base's entity graph, filtered and capped, and the details of a node.

Everything shown comes from the service (`graph.view`, `graph.entity`), which checks that the user
may see the knowledge base. The graph runs in a sandboxed frame with no same-origin, so
nothing in an entity's name or description can act as the signed-in user.
"""

from __future__ import annotations

import functools
import zlib

import streamlit as st

from zhixing.app.graph_html import render_graph
from zhixing.app.services import session_service
from zhixing.app.strings import graph as T
from zhixing.app.widgets import empty_state, guarded, inert, kb_names
from zhixing.core.models.graph import EntityDetails
from zhixing.core.service import GraphFormat, KnowledgeService

HEIGHT = 650
FORMAT_NAMES = {GraphFormat.GRAPHML: "GraphML", GraphFormat.GEXF: "GEXF"}


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


def example(service: KnowledgeService, name: str, entities: int, relations: int) -> str:
    """The search box's example: the knowledge base's best-connected entity, so that it names
    something this base holds, in its language (kept per base while the graph stays the same)."""
    key = (name, entities, relations)
    cached = st.session_state.get("graph-example")
    if cached is None or cached[0] != key:
        view = service.graph.view(name, cap=1)
        cached = (key, view.nodes[0].name if view.nodes else "")
        st.session_state["graph-example"] = cached
    top = cached[1]
    return str(T.SEARCH_PLACEHOLDER.format(example=top) if top else T.SEARCH_PLACEHOLDER_PLAIN)


def downloads(service: KnowledgeService, name: str) -> None:
    """The whole graph as GraphML and GEXF, written only when the button is pressed."""
    for column, fmt in zip(st.columns(4)[:2], GraphFormat, strict=True):
        column.download_button(
            T.DOWNLOAD.format(format=FORMAT_NAMES[fmt]),
            data=functools.partial(service.graph.file, name, fmt),
            file_name=f"{name}.{fmt.value}",
            mime=fmt.media_type,
            help=T.DOWNLOAD_HELP,
            on_click="ignore",
            key=f"graph-download-{fmt.value}",
        )


def details(entity: EntityDetails) -> None:
    # Names and descriptions come from documents: Markdown, but inert (app.widgets.inert).
    st.markdown(inert(f"### {entity.name}"))
    st.markdown(inert(f"**{T.NODE_TYPE}:** {entity.type}"))
    st.markdown(inert(f"**{T.NODE_DESCRIPTION}:** {entity.description or T.NONE}"))
    st.markdown(inert(f"**{T.NODE_ALIASES}:** {'、'.join(entity.aliases) or T.NONE}"))
    st.markdown(f"**{T.NODE_ATTRIBUTES}:**" + ("" if entity.attributes else f" {T.NONE}"))
    if entity.attributes:
        st.json(entity.attributes)
    st.markdown(f"#### {T.RELATIONS}")
    if entity.relations:
        rows = [
            {
                T.COL_RELATION: r.type,
                T.COL_DIRECTION: T.OUTGOING if r.outgoing else T.INCOMING,
                T.COL_OTHER: r.other,
            }
            for r in entity.relations
        ]
        st.dataframe(rows, hide_index=True)
    else:
        st.caption(T.NO_RELATIONS)
    st.markdown(f"#### {T.CHUNKS}")
    if entity.total_chunks > len(entity.chunks):
        st.caption(T.CHUNKS_MORE.format(total=entity.total_chunks, shown=len(entity.chunks)))
    for c in entity.chunks:
        where = dict(document=c.document, ordinal=c.ordinal)
        label = (
            T.CHUNK_LABEL.format(page=c.page, **where)
            if c.page
            else T.CHUNK_LABEL_NO_PAGE.format(line=c.line, **where)
        )
        with st.expander(inert(label)):
            st.markdown(inert(c.text))


def page(service: KnowledgeService) -> None:
    name = st.selectbox(T.KB, kb_names(service), key="graph-kb")
    kb = service.kbs.get(name)
    if kb.mode != "graph":
        st.info(inert(T.INDEX_MODE.format(name=name)))
        return
    stats = service.graph.stats(name)
    if not stats.entities:
        st.info(inert(T.NO_ENTITIES.format(name=name)))
        return
    types, min_degree, cap = filters(kb.id, list(stats.types))
    search_col, hops_col = st.columns([3, 1])
    placeholder = example(service, name, stats.entities, stats.relations)
    query = search_col.text_input(T.SEARCH, placeholder=placeholder, key="graph-search")
    hops = hops_col.slider(T.HOPS, min_value=1, max_value=3, value=1, key="graph-hops")
    view = service.graph.view(
        name, query=query, hops=hops, types=types, min_degree=min_degree, cap=cap
    )
    if query.strip() and not view.seeds:
        st.warning(inert(T.UNKNOWN_ENTITY.format(kb=name, name=query.strip())))
    if not view.nodes:
        st.info(T.NOTHING_SHOWN)
        return
    nodes = {n.id: n for n in view.nodes}
    if view.seeds:
        seed = nodes[view.seeds[0]].name
        st.caption(inert(T.NEIGHBOURHOOD.format(name=seed, hops=hops)))
    st.caption(
        T.STATS.format(
            entities=view.entities,
            relations=view.relations,
            shown=len(nodes),
            edges=len(view.edges),
        )
    )
    if view.left_out:
        st.info(T.LEFT_OUT.format(shown=len(nodes), left=view.left_out))
    downloads(service, name)
    # The HTML holds the graph in a nested frame sandboxed to scripts only (app/graph_html.py).
    drawn = render_graph(view.nodes, view.edges, highlight=view.seeds)
    st.iframe(drawn.embed, height=HEIGHT)

    st.subheader(T.NODE)
    order = [n.id for n in view.nodes]  # seeds first, then by degree
    picked = st.selectbox(
        T.NODE_PICK,
        order,
        format_func=lambda i: T.NODE_OPTION.format(
            name=nodes[i].name, type=nodes[i].type, degree=nodes[i].degree
        ),
        # A new search or filter is a new list; a fresh key starts it on its first entry (the seed).
        key=f"graph-node-{kb.id}-{zlib.crc32(repr(order).encode())}",
    )
    entity = guarded(lambda: service.graph.entity(name, picked))
    if entity is not None:
        details(entity)


service = session_service()
st.title(T.TITLE)
if empty_state(service):
    guarded(lambda: page(service))
