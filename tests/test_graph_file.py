"""The entity graph as a GraphML or GEXF file: `zhixing graph NAME --export FILE`, the service
method behind it and the Graph page's downloads; every file is read back with networkx."""

from __future__ import annotations

import shutil
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
        path.write_bytes(graph_file("kb<&>", entities, relations, fmt))
        graph = _read(path)
        assert graph.nodes["1"]["label"] == 'ab</node><script>"&'
        assert graph.nodes["1"]["aliases"] == "x;y; 别名"
        assert graph.nodes["2"]["mentions"] == 2 and "版本" in graph.nodes["2"]["attributes"]
        assert sorted(d["relation"] for _, _, d in graph.edges(data=True)) == ["part_of", "uses"]


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
