"""core.viz: subgraph -> self-contained pyvis HTML."""

from __future__ import annotations

import json
import re

from core.viz import GraphEdge, GraphNode, node_size, render_graph, type_colours

NODES = [
    GraphNode(1, "SQL 注入", "weakness", 3, "把不可信输入拼进 SQL 语句。"),
    GraphNode(2, "PreparedStatement", "technology", 1, "参数化查询。"),
    GraphNode(3, "OWASP", "organization", 1),
    GraphNode(4, "会话固定", "weakness", 0),
    GraphNode(5, "自定义类型", "my_custom_type", 1),
]
EDGES = [
    GraphEdge(1, 2, "mitigated_by", "用参数化查询防御"),
    GraphEdge(1, 3, "related_to"),
    GraphEdge(5, 1, "part_of"),
    GraphEdge(1, 99, "dangling"),  # an end that is not drawn: dropped
]


def _data(page: str, name: str) -> list[dict]:
    """The vis DataSet literal the template writes (`new vis.DataSet([...])`)."""
    match = re.search(rf"{name} = new vis\.DataSet\((\[.*?\])\);", page, re.S)
    assert match, f"no {name} DataSet in the HTML"
    return json.loads(match.group(1))


def test_the_html_loads_nothing_from_the_internet():
    page = render_graph(NODES, EDGES).html
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page, re.I)
    assert "cdn.jsdelivr.net" not in page and "cdnjs.cloudflare.com" not in page
    assert "vis.Network" in page  # vis-network itself is inlined, not linked


def test_every_node_name_is_in_the_html():
    page = render_graph(NODES, EDGES).html
    labels = {n["label"] for n in _data(page, "nodes")}
    assert labels == {n.name for n in NODES}


def test_nodes_of_different_types_get_different_colours_and_one_type_one_colour():
    page = render_graph(NODES, EDGES).html
    colour = {n["id"]: n["color"] for n in _data(page, "nodes")}
    assert colour[1] == colour[4]  # both weaknesses
    assert len({colour[1], colour[2], colour[3], colour[5]}) == 4
    assert len(set(type_colours(f"type-{i}" for i in range(40)).values())) == 40


def test_node_size_grows_with_degree():
    page = render_graph(NODES, EDGES).html
    size = {n["id"]: n["size"] for n in _data(page, "nodes")}
    assert size[4] < size[2] < size[1]
    assert [node_size(d) for d in (0, 1, 5, 50)] == sorted({node_size(d) for d in (0, 1, 5, 50)})


def test_edges_carry_their_relation_type_and_dangling_edges_are_dropped():
    page = render_graph(NODES, EDGES).html
    edges = _data(page, "edges")
    assert {e["label"] for e in edges} == {"mitigated_by", "related_to", "part_of"}
    assert next(e for e in edges if e["label"] == "related_to")["arrows"] == ""


def test_tooltips_show_type_and_description_and_the_legend_lists_each_type_once():
    rendered = render_graph(NODES, EDGES, highlight=[1])
    first = _data(rendered.html, "nodes")[0]
    assert "weakness" in first["title"] and "把不可信输入" in first["title"]
    assert first["borderWidth"] == 4
    assert [t for t, _ in rendered.legend] == [
        "weakness",
        "technology",
        "organization",
        "my_custom_type",
    ]
    assert 'class="zx-legend"' in rendered.html and "my_custom_type" in rendered.html


def test_physics_and_hover_are_on():
    page = render_graph(NODES, EDGES).html
    assert '"physics": {"enabled": true' in page and '"hover": true' in page


def test_an_empty_graph_still_renders():
    rendered = render_graph([], [])
    assert rendered.legend == [] and "vis.Network" in rendered.html
