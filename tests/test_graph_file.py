"""The entity graph as a GraphML or GEXF file: `zhixing graph NAME --export FILE`, the service
method behind it and the Graph page's downloads; every file is read back with networkx."""

from __future__ import annotations

import re
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from contextlib import closing
from pathlib import Path

import networkx as nx
import pytest

from tests.command import zhixing, zx
from tests.pages import open_page
from zhixing.core.auth import User
from zhixing.core.choices import GraphFormat
from zhixing.core.config import Settings
from zhixing.core.errors import AccessError, NotFoundError
from zhixing.core.graph_file import graph_file
from zhixing.core.service import KnowledgeService
from zhixing.core.store.graph import StoredEntity, StoredRelation


@pytest.fixture
def home(sample_home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "kbhome"
    shutil.copytree(sample_home, copy)
    return copy


def _read(path: Path) -> nx.MultiDiGraph:
    if path.suffix == ".gexf":
        return nx.read_gexf(path)
    return nx.read_graphml(path, force_multigraph=True)


def _items(value: str) -> list[str]:
    """A GEXF 1.3 list value as Gephi reads one (graphstore's ArraysParser): brackets, commas
    and blanks between items; an item quoted with " or ', a backslash taking the next character
    as it is; an unquoted item running to a comma or bracket."""
    items, i = [], 0
    while i < len(value):
        if value[i] in "[](), \t\r\n":
            i += 1
        elif value[i] in "\"'":
            quote, text, i = value[i], [], i + 1
            while i < len(value) and value[i] != quote:
                i += value[i] == "\\"
                text.append(value[i])
                i += 1
            items.append("".join(text))
            i += 1
        else:
            bare = re.match(r"[^,\])]*", value[i:])
            assert bare is not None
            items.append(bare.group().strip())
            i += bare.end()
    return items


def _listed(path: Path, value: str) -> list[str]:
    """A list attribute as read back: GEXF's list value, or GraphML's "; "-joined string."""
    if path.suffix == ".gexf":
        assert value.startswith("[") and value.endswith("]")  # the 1.3 form, not 1.2's a|b
        return _items(value)
    return value.split("; ") if value else []


@pytest.mark.parametrize("suffix", ["graphml", "gexf"])
def test_the_exported_file_holds_every_entity_and_relation(home, embedder, tmp_path, suffix):
    out = tmp_path / f"graph.{suffix}"
    ran = zx(home, "graph", "kb", "--export", str(out))
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        stats = svc.graph.stats("kb")
        bcrypt = svc.graph.neighbourhood("kb", "bcrypt", hops=1)
    assert f"{stats.entities} entities and {stats.relations} relations" in ran.stderr
    graph = _read(out)
    assert graph.number_of_nodes() == stats.entities > 20
    assert graph.number_of_edges() == stats.relations > 10
    labels = {data["label"]: node for node, data in graph.nodes(data=True)}
    assert {"bcrypt", "MD5", "会话标识"} <= set(labels)  # Chinese names survive the round trip
    node = graph.nodes[labels["bcrypt"]]
    assert node["type"] == "technology" and node["mentions"] >= 1
    # The relations of one entity are the file's edges at that node, with their types.
    (seed,) = [n for n in bcrypt.nodes if n.name == "bcrypt"]
    names = {n.id: n.name for n in bcrypt.nodes}
    expected = sorted(
        (names[e.source], e.type, names[e.target])
        for e in bcrypt.edges
        if seed.id in (e.source, e.target)
    )
    found = sorted(
        (graph.nodes[u]["label"], d["relation"], graph.nodes[v]["label"])
        for u, v, d in [
            *graph.out_edges(labels["bcrypt"], data=True),
            *graph.in_edges(labels["bcrypt"], data=True),
        ]
    )
    assert found == expected and expected


def test_names_that_xml_cannot_carry_still_give_a_file_that_parses(tmp_path):
    hostile = 'a\x00b\x1b</node><script>"&\ud800'
    entities = [
        StoredEntity(1, hostile, "concept", "desc \x07 with <tags> & 'quotes'", ["x;y", "别名"]),
        StoredEntity(2, "B", "technology", attributes={"版本": "2"}, chunks=[7, 9]),
    ]
    relations = [
        StoredRelation(10, 1, 2, "uses", "", 2.0),
        StoredRelation(11, 1, 2, "part_of", "twice between one pair", 1.0),
        StoredRelation(12, 1, 99, "dangling", "", 1.0),  # an end not in the graph: left out
    ]
    for fmt in GraphFormat:
        path = tmp_path / f"g.{fmt.value}"
        path.write_bytes(graph_file("kb<&>", entities, relations, fmt, documents={7: "a.md"}))
        graph = _read(path)
        assert graph.nodes["1"]["label"] == 'ab</node><script>"&'
        assert _listed(path, graph.nodes["1"]["aliases"]) == ["x;y", "别名"]
        assert graph.nodes["2"]["mentions"] == 2 and graph.nodes["2"]["attr.版本"] == 2
        assert sorted(d["relation"] for _, _, d in graph.edges(data=True)) == ["part_of", "uses"]


def test_gexf_writes_each_list_as_a_liststring_that_keeps_every_name(tmp_path):
    aliases = ['say "hi"', "a\\b", "x, y", "[z]", "tab\there", "'quoted'", "null", "别名"]
    entities = [
        StoredEntity(1, "A", "concept", aliases=aliases, chunks=[3, 5]),
        StoredEntity(2, "B", "concept"),
    ]
    sources = {3: 'docs/a, "b".md', 5: "c.md"}
    gexf, graphml = tmp_path / "g.gexf", tmp_path / "g.graphml"
    gexf.write_bytes(graph_file("kb", entities, [], GraphFormat.GEXF, documents=sources))
    graphml.write_bytes(graph_file("kb", entities, [], GraphFormat.GRAPHML, documents=sources))
    declared = _declared_types(gexf)
    assert {k: declared[k] for k in ("aliases", "documents", "chunks")} == dict.fromkeys(
        ("aliases", "documents", "chunks"), "liststring"
    )
    # networkx reads a liststring as the text the file holds: the 1.3 form, which Gephi parses.
    node, bare = _read(gexf).nodes["1"], _read(gexf).nodes["2"]
    assert _listed(gexf, node["aliases"]) == aliases
    assert _listed(gexf, node["documents"]) == ["c.md", 'docs/a, "b".md']  # sorted
    assert node["chunks"] == "[3, 5]" and bare["aliases"] == bare["chunks"] == "[]"
    # GraphML has no list type: the same names, "; "-joined, in a string key.
    assert _declared_types(graphml)["aliases"] == "string"
    assert _listed(graphml, _read(graphml).nodes["1"]["aliases"]) == aliases


def test_the_files_carry_no_name_of_networkx_and_tell_parallel_edges_apart(tmp_path):
    entities = [StoredEntity(1, "A", "concept"), StoredEntity(2, "B", "technology")]
    relations = [
        StoredRelation(10, 1, 2, "uses", "", 2.0),
        StoredRelation(11, 1, 2, "part_of", "", 1.0),
    ]
    for fmt in GraphFormat:
        path = tmp_path / f"g.{fmt.value}"
        path.write_bytes(graph_file("kb", entities, relations, fmt, documents={}))
        text = path.read_text(encoding="utf-8")
        assert "networkx_key" not in text and 'title="key"' not in text
        assert {n for _, _, d in _read(path).edges(data=True) for n in d} <= {
            "id",
            "label",
            "relation",
            "description",
            "weight",
        }
    root = ET.parse(tmp_path / "g.gexf").getroot()
    assert root.tag == "{http://gexf.net/1.3}gexf" and root.get("version") == "1.3"
    schema = root.get("{http://www.w3.org/2001/XMLSchema-instance}schemaLocation")
    assert schema == "http://gexf.net/1.3 http://gexf.net/1.3/gexf.xsd"
    # GEXF 1.3 keeps parallel edges apart by their kind: one per relation type.
    kinds = {e.get("id"): e.get("kind") for e in root.iter("{http://gexf.net/1.3}edge")}
    assert kinds == {"10": "uses", "11": "part_of"}
    assert _edge_ids(tmp_path / "g.gexf") == _edge_ids(tmp_path / "g.graphml")


def _declared_types(path: Path) -> dict[str, str]:
    """Each node attribute's name and the type the file declares for it, read from the XML."""
    root = ET.parse(path).getroot()
    if path.suffix == ".gexf":
        return {
            a.get("title", ""): a.get("type", "")
            for a in root.iter("{http://gexf.net/1.3}attribute")
        }
    keys = root.iter("{http://graphml.graphdrawing.org/xmlns}key")
    return {k.get("attr.name", ""): k.get("attr.type", "") for k in keys if k.get("for") == "node"}


def _edge_ids(path: Path) -> dict[str, tuple[str, str]]:
    """Each edge's id in the file with the ids of its two ends, read from the XML."""
    root = ET.parse(path).getroot()
    return {
        e.get("id", ""): (e.get("source", ""), e.get("target", ""))
        for e in root.iter()
        if e.tag.endswith("}edge")
    }


def test_entity_attributes_become_typed_attributes_of_their_own(tmp_path):
    entities = [
        StoredEntity(1, "A", "technology", attributes={"版本": "2", "开源": "true", "大小": "1"}),
        StoredEntity(
            2,
            "B",
            "technology",
            attributes={"版本": "3", "开源": "False", "大小": "1.5", "电话": "0571"},
        ),
        StoredEntity(3, "C", "concept", attributes={"版本": "３"}),  # a full-width digit
    ]
    # Whole numbers in long, numbers in double, booleans in boolean, the rest in string: one
    # type per attribute, the one every value of it reads as.
    expected = {
        "graphml": {"attr.版本": "string", "attr.开源": "boolean", "attr.大小": "double"},
        "gexf": {"attr.版本": "string", "attr.开源": "boolean", "attr.大小": "double"},
    }
    for fmt in GraphFormat:
        path = tmp_path / f"g.{fmt.value}"
        path.write_bytes(graph_file("kb", entities, [], fmt, documents={}))
        declared = _declared_types(path)
        assert {k: declared[k] for k in expected[fmt.value]} == expected[fmt.value]
        assert declared["attr.电话"] == "string"  # a leading zero: kept as written
        assert "attributes" not in declared  # no JSON string left beside them
        graph = _read(path)
        assert graph.nodes["1"]["attr.开源"] is True and graph.nodes["2"]["attr.开源"] is False
        assert graph.nodes["2"]["attr.大小"] == 1.5 and graph.nodes["1"]["attr.大小"] == 1.0
        assert graph.nodes["2"]["attr.电话"] == "0571"
        assert graph.nodes["3"]["attr.版本"] == "３" and "attr.电话" not in graph.nodes["1"]
    only_ints = [StoredEntity(1, "A", "t", attributes={"年份": "2024"}), StoredEntity(2, "B", "t")]
    for fmt in GraphFormat:
        path = tmp_path / f"ints.{fmt.value}"
        path.write_bytes(graph_file("kb", only_ints, [], fmt, documents={}))
        assert _declared_types(path)["attr.年份"] == "long"
        assert _read(path).nodes["1"]["attr.年份"] == 2024


def test_each_node_names_the_documents_and_chunks_that_mention_it(tmp_path):
    entities = [
        StoredEntity(1, "bcrypt", "technology", chunks=[4, 7, 9]),
        StoredEntity(2, "MD5", "technology"),
    ]
    sources = {4: "docs/口令.md", 7: "docs/口令.md", 9: "auth.pdf", 5: "other.txt"}
    for fmt in GraphFormat:
        path = tmp_path / f"g.{fmt.value}"
        path.write_bytes(graph_file("kb", entities, [], fmt, documents=sources))
        node, unmentioned = _read(path).nodes["1"], _read(path).nodes["2"]
        assert _listed(path, node["documents"]) == ["auth.pdf", "docs/口令.md"]
        assert node["document_count"] == 2
        assert _listed(path, node["chunks"]) == ["4", "7", "9"] and node["mentions"] == 3
        assert _listed(path, unmentioned["documents"]) == _listed(path, unmentioned["chunks"]) == []
        assert unmentioned["document_count"] == unmentioned["mentions"] == 0


def test_both_formats_give_each_relation_the_same_edge_id(home, embedder, tmp_path):
    for suffix in ("graphml", "gexf"):
        zx(home, "graph", "kb", "--export", str(tmp_path / f"graph.{suffix}"))
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        stats = svc.graph.stats("kb")
        bcrypt = svc.graph.neighbourhood("kb", "bcrypt", hops=1)
        (seed,) = [n for n in bcrypt.nodes if n.name == "bcrypt"]
        details = svc.graph.entity("kb", seed.id)
    graphml, gexf = _edge_ids(tmp_path / "graph.graphml"), _edge_ids(tmp_path / "graph.gexf")
    assert graphml == gexf and len(gexf) == stats.relations > 10
    # The ids are the relations' own, and each edge joins the entities its relation joins.
    with closing(sqlite3.connect(home / "catalog.db")) as db:
        rows = db.execute(
            "SELECT r.id, r.source_id, r.target_id FROM relations r"
            " JOIN knowledge_bases k ON k.id = r.kb_id WHERE k.name = 'kb'"
        ).fetchall()
    assert gexf == {str(i): (str(source), str(target)) for i, source, target in rows}
    # The real knowledge base's node leads back to the chunks the entity page lists.
    gexf_path = tmp_path / "graph.gexf"
    node = _read(gexf_path).nodes[str(seed.id)]
    chunk_ids = {int(c) for c in _listed(gexf_path, node["chunks"])}
    assert {c.chunk_id for c in details.chunks} <= chunk_ids and details.chunks
    sources = _listed(gexf_path, node["documents"])
    assert node["document_count"] == len(sources) >= 1
    for chunk in details.chunks:
        assert any(chunk.document == s or chunk.document.endswith(f"({s})") for s in sources)


def test_bad_export_requests_get_one_sentence_and_leave_files_alone(home, tmp_path):
    kept = tmp_path / "graph.graphml"
    kept.write_text("an earlier export", encoding="utf-8")
    wrong = zhixing(home, "graph", "kb", "--export", str(tmp_path / "graph.png"))
    assert wrong.returncode != 0 and "writes .graphml or .gexf" in wrong.stderr
    nowhere = zhixing(home, "graph", "kb", "--export", str(tmp_path / "missing" / "g.gexf"))
    assert nowhere.returncode != 0 and "is not a folder" in nowhere.stderr
    unknown = zhixing(home, "graph", "nope", "--export", str(kept))
    assert unknown.returncode != 0 and "nope" in unknown.stderr
    zx(home, "kb", "create", "plain")  # index mode: no graph
    empty = zhixing(home, "graph", "plain", "--export", str(kept))
    assert empty.returncode != 0 and "no entity graph" in empty.stderr
    for ran in (wrong, nowhere, unknown, empty):
        assert "Traceback" not in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    assert kept.read_text(encoding="utf-8") == "an earlier export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.graphml", "kbhome"]


def test_a_viewer_cannot_export_a_knowledge_base_they_may_not_see(home, embedder):
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.users.add("alice", "viewer", "a long enough password")
        svc.users.add("bob", "viewer", "another long password")
        svc.kbs.restrict("kb", ["alice"])
        assert b"bcrypt" in svc.as_user(User("alice", "viewer")).graph.file("kb", "gexf")
        with pytest.raises((NotFoundError, AccessError)):
            svc.as_user(User("bob", "viewer")).graph.file("kb", "graphml")


def test_the_graph_page_offers_both_files(sample_home, app_home):
    shutil.copytree(sample_home, app_home)
    at = open_page("graph")
    buttons = at.get("download_button")
    labels = [b.proto.label for b in buttons]
    assert labels == ["下载完整图谱（GraphML）", "下载完整图谱（GEXF）"]
