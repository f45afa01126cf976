"""A knowledge base's entity graph as a file other tools open: GraphML (yEd, Cytoscape, Gephi,
networkx) or GEXF (Gephi). The only module that imports networkx.

One node per entity, keyed by its catalog id, with
- `label` (its name), `type`, `description`;
- `aliases`: its other names, "; "-joined;
- `attr.NAME` for each of its attributes, typed: a key whose every value reads as a boolean,
  a whole number or a number is written as `boolean`, `long` or `double`, any other as a
  string, so that Gephi and yEd can filter and colour on it;
- `documents` (the sources of the documents whose chunks mention it, "; "-joined) with
  `document_count`, and `chunks` (those chunks' ids, "; "-joined) with `mentions` (their count):
  the way back from a node to what it was read from.

Neither format holds a list here: GraphML has no list type, and networkx's GEXF writer takes a
list value for a dynamic attribute (value, start, end), never for GEXF's `liststring`; Gephi
itself reads `liststring` inconsistently across versions. So every list is one string in both.

One directed edge per relation, with `label` and `relation` (its type: GEXF reserves an edge's
`type` for directed/undirected), `description` and `weight`. Its id is the relation's catalog
id in both formats, so one file's edge can be found in the other. Two entities may be joined by
several relations, so the graph is a multigraph.

Names and descriptions come from documents and LLM output: characters XML 1.0 cannot carry
(control characters, lone surrogates) are dropped, so the file always parses.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence

import networkx as nx

from .choices import GraphFormat
from .store.graph import StoredEntity, StoredRelation

__all__ = ["graph_file"]

# Not allowed in XML 1.0 documents: C0 controls but tab, newline and carriage return; surrogates;
# U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# ASCII digits only (`\d` and int() also take full-width and other scripts' digits), and no
# leading zero: "0571" is a code to keep as written, not the number 571.
_INT = re.compile(r"[+-]?(0|[1-9][0-9]*)")
# A number written with a point or an exponent; a whole number is a double only beside these.
_DECIMAL = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))([eE][+-]?[0-9]+)?")
_BOOLEANS = {"true": True, "false": False}
# Both writers declare a Python int as `long` (64 bits); a larger whole number stays a string
# rather than overflow a reader.
_INT_LIMIT = 2**63

Value = str | int | float | bool


def _text(value: str) -> str:
    return _NOT_XML.sub("", value)


def _is_int(value: str) -> bool:
    return bool(_INT.fullmatch(value)) and abs(int(value)) < _INT_LIMIT


def _is_decimal(value: str) -> bool:
    return bool(_DECIMAL.fullmatch(value)) and math.isfinite(float(value))


def _column_type(values: Sequence[str]) -> type:
    """The one type every value of an attribute reads as: each format declares a key once."""
    stripped = [v.strip() for v in values]
    if all(v.lower() in _BOOLEANS for v in stripped):
        return bool
    if all(_is_int(v) for v in stripped):
        return int
    if all(_is_int(v) or _is_decimal(v) for v in stripped):
        return float
    return str


def _typed(value: str, kind: type) -> Value:
    if kind is bool:
        return _BOOLEANS[value.strip().lower()]
    if kind is int:
        return int(value.strip())
    if kind is float:
        return float(value.strip())
    return _text(value)


def _attribute_types(entities: Sequence[StoredEntity]) -> dict[str, type]:
    values: dict[str, list[str]] = {}
    for e in entities:
        for key, value in e.attributes.items():
            values.setdefault(key, []).append(str(value))
    return {key: _column_type(found) for key, found in values.items()}


def _node(
    entity: StoredEntity, kinds: Mapping[str, type], documents: Mapping[int, str]
) -> dict[str, Value]:
    sources = sorted({documents[c] for c in entity.chunks if c in documents})
    node: dict[str, Value] = {
        "label": _text(entity.name),
        "type": _text(entity.type),
        "description": _text(entity.description),
        "aliases": _text("; ".join(entity.aliases)),
        "documents": _text("; ".join(sources)),
        "document_count": len(sources),
        "chunks": "; ".join(str(c) for c in entity.chunks),
        "mentions": len(entity.chunks),
    }
    for key, value in entity.attributes.items():
        node[f"attr.{_text(key)}"] = _typed(str(value), kinds[key])
    return node


def graph_file(
    name: str,
    entities: Sequence[StoredEntity],
    relations: Sequence[StoredRelation],
    fmt: GraphFormat,
    *,
    documents: Mapping[int, str],
) -> bytes:
    """Write the graph of the knowledge base `name` as the bytes of a `fmt` file (UTF-8 XML).

    `documents` maps a chunk's id to its document's source; chunks it lacks name no document.
    """
    graph = nx.MultiDiGraph(name=_text(name))
    kinds = _attribute_types(entities)
    for e in entities:
        graph.add_node(e.id, **_node(e, kinds, documents))
    known = set(graph)
    for r in relations:
        if r.source in known and r.target in known:  # a relation always joins two entities
            edge: dict[str, Value] = {
                "label": _text(r.type),
                "relation": _text(r.type),
                "description": _text(r.description),
                "weight": float(r.weight),
            }
            if fmt is GraphFormat.GEXF:
                # GraphML takes an edge's id from its key; networkx's GEXF writer numbers edges
                # from 0 unless the edge carries an `id`.
                edge["id"] = str(r.id)
            graph.add_edge(r.source, r.target, key=r.id, **edge)
    out = io.BytesIO()
    if fmt is GraphFormat.GEXF:
        nx.write_gexf(graph, out, encoding="utf-8")
    else:
        nx.write_graphml(graph, out, encoding="utf-8", named_key_ids=True)
    return out.getvalue()
