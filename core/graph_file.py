"""A knowledge base's entity graph as a file other tools open: GraphML (yEd, Cytoscape, Gephi,
networkx) or GEXF (Gephi). The only module that imports networkx.

One node per entity, keyed by its catalog id, with `label` (its name), `type`, `description`,
`aliases` ("; "-joined), `attributes` (JSON) and `mentions` (how many chunks mention it); one
directed edge per relation, with `label` and `relation` (its type: GEXF reserves an edge's `type`
for directed/undirected), `description` and `weight`. Two entities may be joined by several
relations, so the graph is a multigraph.

Names and descriptions come from documents and LLM output: characters XML 1.0 cannot carry
(control characters, lone surrogates) are dropped, so the file always parses.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence

import networkx as nx

from .choices import GraphFormat
from .store.graph import StoredEntity, StoredRelation

__all__ = ["graph_file"]

# Not allowed in XML 1.0 documents: C0 controls but tab, newline and carriage return; surrogates;
# U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("", value)


def graph_file(
    name: str,
    entities: Sequence[StoredEntity],
    relations: Sequence[StoredRelation],
    fmt: GraphFormat,
) -> bytes:
    """The graph of the knowledge base `name` as the bytes of a `fmt` file (UTF-8 XML)."""
    graph = nx.MultiDiGraph(name=_text(name))
    for e in entities:
        graph.add_node(
            e.id,
            label=_text(e.name),
            type=_text(e.type),
            description=_text(e.description),
            aliases=_text("; ".join(e.aliases)),
            attributes=_text(json.dumps(e.attributes, ensure_ascii=False)) if e.attributes else "",
            mentions=len(e.chunks),
        )
    known = set(graph)
    for r in relations:
        if r.source in known and r.target in known:  # a relation always joins two entities
            graph.add_edge(
                r.source,
                r.target,
                key=r.id,
                label=_text(r.type),
                relation=_text(r.type),
                description=_text(r.description),
                weight=float(r.weight),
            )
    out = io.BytesIO()
    if fmt is GraphFormat.GEXF:
        nx.write_gexf(graph, out, encoding="utf-8")
    else:
        nx.write_graphml(graph, out, encoding="utf-8", named_key_ids=True)
    return out.getvalue()
