"""Node names on a big graph, in Chromium (issue 17): vis-network leaves out a label too small
on screen, and a graph of a hundred nodes or more is drawn far smaller than its size to fit its
frame, so at first sight no node had a name. The best-connected nodes' names stay readable."""

from __future__ import annotations

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from zhixing.app.graph_html import LABEL_PX, LABELLED, labelled, render_graph
from zhixing.core.models.graph import GraphEdgeView, GraphNodeView

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SIZE = 150
# Ten hubs, each linked to fourteen others; every other node to two neighbours.
EDGES = [
    GraphEdgeView(hub, (hub * 14 + k) % SIZE, "related_to") for hub in range(10) for k in range(14)
]
EDGES += [GraphEdgeView(i, (i + 1) % SIZE, "part_of") for i in range(10, SIZE)]


def _nodes() -> list[GraphNodeView]:
    degree = dict.fromkeys(range(SIZE), 0)
    for e in EDGES:
        degree[e.source] += 1
        degree[e.target] += 1
    return [GraphNodeView(i, f"实体 entity {i}", "concept", degree[i]) for i in range(SIZE)]


# What vis-network shows of each node once the layout has settled and fitted the frame.
_SHOWN = """() => {
  const out = {};
  for (const id of nodes.getIds()) {
    const label = network.body.nodes[id].labelModule;
    out[id] = [label.visible(), label.fontOptions.size * network.getScale()];
  }
  return {scale: network.getScale(), nodes: out};
}"""


def test_a_big_graph_zoomed_out_to_fit_still_names_its_best_connected_nodes(tmp_path):
    require_chromium()
    from playwright.sync_api import sync_playwright

    nodes = _nodes()
    page_file = tmp_path / "graph.html"
    page_file.write_text(render_graph(nodes, EDGES).html, encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.goto(page_file.as_uri())
            page.wait_for_function("() => network && network.physics.stabilized", timeout=60_000)
            page.wait_for_timeout(500)  # the fit after stabilizing
            shown = page.evaluate(_SHOWN)
        finally:
            browser.close()
    assert shown["scale"] < 0.5, "the graph is drawn zoomed out, or the test shows nothing"
    named = {int(i) for i, (visible, _) in shown["nodes"].items() if visible}
    hubs = set(labelled(nodes))
    assert len(hubs) == LABELLED and hubs <= named
    assert set(range(10)) <= hubs  # the ten hubs are the best connected
    for i in hubs:
        assert shown["nodes"][str(i)][1] == pytest.approx(LABEL_PX, abs=1)  # on screen, in px
