"""app/graph_html.py: subgraph -> self-contained pyvis HTML."""

from __future__ import annotations

import html
import json
import re

import pytest

from zhixing.app.graph_html import (
    LABELLED,
    labelled,
    node_size,
    render_graph,
    type_colours,
)
from zhixing.core.models.graph import GraphEdgeView, GraphNodeView

NODES = [
    GraphNodeView(1, "SQL 注入", "weakness", 3, "把不可信输入拼进 SQL 语句。"),
    GraphNodeView(2, "PreparedStatement", "technology", 1, "参数化查询。"),
    GraphNodeView(3, "OWASP", "organization", 1),
    GraphNodeView(4, "会话固定", "weakness", 0),
    GraphNodeView(5, "自定义类型", "my_custom_type", 1),
]
EDGES = [
    GraphEdgeView(1, 2, "mitigated_by", "用参数化查询防御"),
    GraphEdgeView(1, 3, "related_to"),
    GraphEdgeView(5, 1, "part_of"),
    GraphEdgeView(1, 99, "dangling"),  # an end that is not drawn: dropped
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
    # and its policy lets nothing load or send: only inline script and style, data: images.
    [policy] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert "default-src 'none'" in policy and "connect-src" not in policy


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


# --- hostile names (docs/architecture.md §10: entity names reach HTML only escaped) ----------------------------

XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_SCRIPT = "</script><script>alert(2)</script>"
HOSTILE = [
    GraphNodeView(1, XSS_IMG, XSS_SCRIPT, 2, f"{XSS_IMG} {XSS_SCRIPT}"),
    GraphNodeView(2, XSS_SCRIPT, "weakness", 1, "<!-- -->"),
]
HOSTILE_EDGES = [GraphEdgeView(1, 2, XSS_IMG, XSS_SCRIPT)]


def _scripts(page: str) -> list[str]:
    return re.findall(r"<script\b[^>]*>(.*?)</script>", page, re.S | re.I)


def test_hostile_names_never_reach_the_html_as_markup():
    page = render_graph(HOSTILE, HOSTILE_EDGES).html
    clean = render_graph(
        [GraphNodeView(1, "a", "t", 2), GraphNodeView(2, "b", "weakness", 1)], []
    ).html
    assert "<img" not in page.lower()  # not in the data, the legend nor the tooltips
    # The data cannot close its script block: exactly as many script tags as a harmless graph.
    assert page.lower().count("</script") == clean.lower().count("</script")
    assert page.lower().count("<script") == clean.lower().count("<script")
    assert not any("onerror" in s and "<img" in s for s in _scripts(page))


def test_hostile_names_round_trip_as_data_so_vis_draws_them_as_text():
    page = render_graph(HOSTILE, HOSTILE_EDGES).html
    nodes = {n["id"]: n for n in _data(page, "nodes")}
    assert nodes[1]["label"] == XSS_IMG and nodes[2]["label"] == XSS_SCRIPT
    assert XSS_SCRIPT in nodes[1]["title"]  # a string tooltip: vis-network sets it as innerText
    edge = _data(page, "edges")[0]
    assert edge["label"] == XSS_IMG and edge["title"] == XSS_SCRIPT


def test_the_legend_escapes_a_hostile_type():
    rendered = render_graph(HOSTILE, HOSTILE_EDGES)
    assert (XSS_SCRIPT, rendered.legend[0][1]) in rendered.legend
    legend = re.search(r'<div class="zx-legend">.*?</div>', rendered.html, re.S).group(0)
    assert "&lt;/script&gt;&lt;script&gt;alert(2)" in legend
    assert "<script" not in legend


def test_a_page_whose_data_would_hold_raw_markup_is_refused(monkeypatch):
    import pyvis.network

    # If pyvis ever stopped escaping its JSON, the guard refuses the page instead of serving it.
    original = pyvis.network.Network.generate_html

    def careless(self, *args, **kwargs):
        return original(self, *args, **kwargs).replace("\\u003c", "<")

    monkeypatch.setattr(pyvis.network.Network, "generate_html", careless)
    with pytest.raises(RuntimeError, match="raw '<'"):
        render_graph(HOSTILE, HOSTILE_EDGES)


# --- pyvis's href popup and the sandboxed embed ---------------------------------------------------

HREF_IMG = '<a href="javascript:alert(3)">href</a><img src=x onerror=alert(4)>'


def test_a_title_with_href_and_markup_stays_text_no_innerhtml_fed_by_titles():
    # pyvis switches to its own popup (`popup.innerHTML = title`) when a title holds "href".
    page = render_graph([GraphNodeView(1, HREF_IMG, "t", 0, f"{HREF_IMG} href")], []).html
    code = re.sub(r"^\s*(?:nodes|edges) = new vis\.DataSet\(.*$", "", page, flags=re.M)
    assert "make a custom popup" not in code and "popup.innerHTML" not in code
    assert not re.search(r"\.innerHTML\s*\+?=(?!=)[^;\n]*title", code)
    assert not re.search(r"\.(?:inner|outer)HTML\s*\+?=(?!=)", code)  # no sink at all, < 100 nodes
    assert _data(page, "nodes")[0]["title"].startswith(HREF_IMG)  # the text itself is kept


def test_a_big_graph_keeps_only_the_loading_bar_text_as_html():
    nodes = [GraphNodeView(i, f"n{i} href", "t") for i in range(120)]  # > 100: the loading bar
    page = render_graph(nodes, []).html
    sinks = re.findall(r"\.innerHTML\s*=\s*([^;\n]*)", page)
    assert sinks and set(sinks) <= {"Math.round(widthFactor*100) + '%'", "'100%'"}


def test_names_that_look_like_template_code_do_not_confuse_the_popup_cut():
    name = "// make a custom popup function showPopup( { x.innerHTML = title;"
    page = render_graph([GraphNodeView(1, name, "t", 0, "href")], []).html
    assert _data(page, "nodes")[0]["label"] == name and "vis.Network(container" in page


@pytest.mark.parametrize(
    "sabotage",
    [
        # The cut no longer finds the branch (the comment renamed): the guard still sees the sink.
        lambda page: page.replace("// make a custom popup", "// popup"),
        # The data written as markup some other way.
        lambda page: page.replace("return network;", "x.insertAdjacentHTML('beforeend', t);"),
        lambda page: page.replace("return network;", "el.innerHTML += nodes.get(1).title;"),
    ],
)
def test_a_page_that_would_write_titles_as_html_is_refused(monkeypatch, sabotage):
    import pyvis.network

    original = pyvis.network.Network.generate_html
    monkeypatch.setattr(
        pyvis.network.Network,
        "generate_html",
        lambda self, *a, **k: sabotage(original(self, *a, **k)),
    )
    with pytest.raises(RuntimeError, match="as markup"):
        render_graph([GraphNodeView(1, "a href", "t")], [])


def test_a_popup_branch_that_cannot_be_cut_whole_is_refused(monkeypatch):
    import pyvis.network

    original = pyvis.network.Network.generate_html

    def truncated(self, *args, **kwargs):
        page = original(self, *args, **kwargs)
        return page.replace("function showPopup(", "function shownPopup(")

    monkeypatch.setattr(pyvis.network.Network, "generate_html", truncated)
    with pytest.raises(RuntimeError, match="custom popup"):
        render_graph([GraphNodeView(1, "a href", "t")], [])


def _embed_frame(embed: str) -> tuple[str, str]:
    """The nested iframe's start tag and what lies outside any srcdoc attribute."""
    tags = re.findall(r"<iframe\b[^>]*>", embed, re.I)
    assert len(tags) == 1, "one nested frame"
    outside = re.sub(r'\ssrcdoc="[^"]*"', "", embed)
    return tags[0], outside


def test_the_embed_sandboxes_the_page_without_same_origin_and_has_no_script_of_its_own():
    rendered = render_graph(HOSTILE, HOSTILE_EDGES, height=500)
    tag, outside = _embed_frame(rendered.embed)
    assert re.search(r'\ssandbox="allow-scripts"', tag)
    assert "allow-same-origin" not in outside
    assert "<script" not in outside.lower() and not re.search(r"\son\w+\s*=", outside, re.I)
    assert "height:500px" in outside and "width:100%" in outside and "border:0" in outside
    srcdoc = re.search(r'\ssrcdoc="([^"]*)"', rendered.embed).group(1)
    assert html.unescape(srcdoc) == rendered.html  # the page, attribute-escaped, nothing else
    assert "<" not in srcdoc and "'" not in srcdoc
    assert rendered.height == 500


def test_the_searched_and_best_connected_nodes_are_the_ones_named_when_zoomed_out():
    nodes = [GraphNodeView(i, f"node {i}", "concept", i % 40) for i in range(120)]
    ids = labelled(nodes, highlight=[0])
    assert ids[0] == 0 and len(ids) == LABELLED  # the searched node first, though of degree 0
    assert {n.id for n in nodes if n.degree >= 39} <= set(ids)
    page = render_graph(nodes, [], highlight=[0]).html
    # The page's own script keeps their names readable; it carries ids, never names.
    [script] = re.findall(r"<script>\(function \(\) \{var ids = (\[[\d, ]*\])", page)
    assert json.loads(script) == ids
    assert sorted(labelled(NODES)) == [1, 2, 3, 4, 5]  # a small graph names every node
