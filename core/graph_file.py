"""A knowledge base's entity graph as a file other tools open: GraphML (yEd, Cytoscape, Gephi,
networkx) or GEXF 1.3 (Gephi 0.9.3 and later). The only module that imports networkx.

One node per entity, keyed by its catalog id, with
- `label` (its name), `type`, `description`;
- `aliases`: its other names;
- `attr.NAME` for each of its attributes, typed: a key whose every value reads as a boolean,
  a whole number or a number is written as `boolean`, `long` or `double`, any other as a
  string, so that Gephi and yEd can filter and colour on it;
- `documents` (the sources of the documents whose chunks mention it) with `document_count`,
  and `chunks` (those chunks' ids) with `mentions` (their count): the way back from a node to
  what it was read from.

`aliases`, `documents` and `chunks` are lists. GEXF 1.3 has list types: the three are declared
`liststring`, each value written as the 1.3 primer's "List Attributes" writes one, `["a", "b"]`
(`[]` when empty), every name quoted with a backslash before a `"` or `\\` in it, as Gephi's
own reader takes it; the chunks' ids unquoted, `[4, 7]`. GraphML has no list type
(a key's `attr.type` is boolean, int, long, float, double or string), so there each is one
"; "-joined string. networkx writes GEXF lists only as dynamic values (value, start, end), so
this module writes the list value itself and declares its type in the XML networkx wrote.

One directed edge per relation, with `label` and `relation` (its type: GEXF reserves an edge's
`type` for directed/undirected), `description` and `weight`. Its id is the relation's catalog
id in both formats, so one file's edge can be found in the other. Two entities may be joined by
several relations, so the graph is a multigraph: GEXF 1.3 tells parallel edges apart by their
`kind`, which is the relation's type (unique for a pair of entities in the catalog). networkx's
own multigraph key is not written: it would be a second copy of the id, named after networkx.

Names and descriptions come from documents and LLM output: characters XML 1.0 cannot carry
(control characters, lone surrogates) are dropped, so the file always parses.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET
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

_GEXF = "http://gexf.net/1.3"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
# The node attributes that are lists, declared `liststring` in GEXF. The chunks' ids would be a
# `listlong`, but networkx's reader (3.6) knows no list type but `liststring` and fails on the
# file; unquoted, `[4, 7]`, they read as numbers wherever the list is parsed as numbers.
_LISTS = frozenset({"aliases", "documents", "chunks"})


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


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _gexf_list(items: Sequence[str | int]) -> str:
    """Write a GEXF 1.3 list value: `["a", "b"]`, `[4, 7]`, `[]`."""
    return "[" + ", ".join(str(i) if isinstance(i, int) else _quoted(i) for i in items) + "]"


def _joined(items: Sequence[str | int]) -> str:
    return "; ".join(str(i) for i in items)


def _node(
    entity: StoredEntity,
    kinds: Mapping[str, type],
    documents: Mapping[int, str],
    fmt: GraphFormat,
) -> dict[str, Value]:
    sources = sorted({documents[c] for c in entity.chunks if c in documents})
    listed = _gexf_list if fmt is GraphFormat.GEXF else _joined
    node: dict[str, Value] = {
        "label": _text(entity.name),
        "type": _text(entity.type),
        "description": _text(entity.description),
        "aliases": listed([_text(a) for a in entity.aliases]),
        "documents": listed([_text(s) for s in sources]),
        "document_count": len(sources),
        "chunks": listed(list(entity.chunks)),
        "mentions": len(entity.chunks),
    }
    for key, value in entity.attributes.items():
        node[f"attr.{_text(key)}"] = _typed(str(value), kinds[key])
    return node


def _finish_gexf(written: bytes, kinds: Mapping[str, str]) -> bytes:
    """The GEXF networkx wrote, with list types declared, each edge's `kind`, and no key of its own.

    `kinds` maps an edge's id to its relation's type.
    """
    root = ET.fromstring(written)
    # Tags back to plain names, with the namespaces declared as attributes (as networkx builds
    # the tree), so that the file comes out with GEXF as its default namespace and no prefixes.
    for element in root.iter():
        element.tag = element.tag.removeprefix(f"{{{_GEXF}}}")
    version = root.get("version", "1.3")
    root.attrib.clear()
    # networkx 3.6 declares xsi as http://w3.org/2001/XMLSchema-instance (no "www."), a
    # namespace no validator knows: the schema location goes in the right one.
    root.attrib.update(
        {
            "xmlns": _GEXF,
            "xmlns:xsi": _XSI,
            "xsi:schemaLocation": f"{_GEXF} {_GEXF}/gexf.xsd",
            "version": version,
        }
    )
    graph = root.find("graph")
    assert graph is not None  # networkx always writes one
    for declared in graph.findall("attributes"):
        for attribute in declared.findall("attribute"):
            title = attribute.get("title", "")
            if declared.get("class") == "node" and title in _LISTS:
                attribute.set("type", "liststring")
            elif declared.get("class") == "edge" and title == "networkx_key":
                declared.remove(attribute)
                _drop_values(graph, attribute.get("id", ""))
        if not len(declared):
            graph.remove(declared)
    for edge in graph.iter("edge"):
        edge.set("kind", kinds[edge.get("id", "")])
    ET.indent(root)
    out = io.BytesIO()
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return out.getvalue()


def _drop_values(graph: ET.Element, attribute_id: str) -> None:
    for edge in graph.iter("edge"):
        for values in edge.findall("attvalues"):
            for value in values.findall("attvalue"):
                if value.get("for") == attribute_id:
                    values.remove(value)
            if not len(values):
                edge.remove(values)


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
        graph.add_node(e.id, **_node(e, kinds, documents, fmt))
    known = set(graph)
    relation_types: dict[str, str] = {}
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
            relation_types[str(r.id)] = _text(r.type)
            graph.add_edge(r.source, r.target, key=r.id, **edge)
    out = io.BytesIO()
    if fmt is GraphFormat.GEXF:
        nx.write_gexf(graph, out, encoding="utf-8", version="1.3")
        return _finish_gexf(out.getvalue(), relation_types)
    nx.write_graphml(graph, out, encoding="utf-8", named_key_ids=True)
    return out.getvalue()
