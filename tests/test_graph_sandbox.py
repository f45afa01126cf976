"""The graph embed in Chromium, framed the way st.iframe frames it: hostile entity text stays
text, and the graph's script runs with an opaque origin that cannot reach the app."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import streamlit

from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from zhixing.app.graph_html import render_graph
from zhixing.core.models.graph import GraphEdgeView, GraphNodeView

pytestmark = [pytest.mark.slow, pytest.mark.browser]

HOST = "http://zhixing.test/"  # served by page.route: a real origin, with cookies and storage
CANARIES = ["pwned", "zxImg", "zxScript", "zxSvg", "zxLink", "zxLong"]
# Each payload sets a global in its own frame, calls alert, then reaches for the app's window.
IMG = "<img src=x onerror=window.zxImg=1;alert(1);top.pwned=1>"
SCRIPT = "</script><script>window.zxScript=1;alert(2);top.pwned=1</script>"
QUOTES = '"\'><svg onload="window.zxSvg=1;alert(3);top.pwned=1">\''
LINK = '<a href="javascript:window.zxLink=1;alert(4);top.pwned=1">href</a>'
RTL = "\u202egpj.exe\u202c 名称"
LONG = "<img src=x onerror=window.zxLong=1;alert(5);top.pwned=1> " + "很长的描述 " * 800
NODES = [
    GraphNodeView(1, IMG, SCRIPT, 3, f"{LINK} {QUOTES}"),
    GraphNodeView(2, SCRIPT, "href", 2, IMG),
    GraphNodeView(3, QUOTES, "weakness", 2, LONG),
    GraphNodeView(4, LINK, QUOTES, 1, "javascript:alert(6)"),
    GraphNodeView(5, RTL, RTL, 1, f"href {RTL}"),
]
EDGES = [
    GraphEdgeView(1, 2, IMG, f"{SCRIPT} href"),
    GraphEdgeView(2, 3, SCRIPT, LONG),
    GraphEdgeView(3, 4, QUOTES, LINK),
    GraphEdgeView(1, 5, RTL, ""),
    GraphEdgeView(4, 1, "related_to", QUOTES),
]


def _streamlit_frame_attributes() -> tuple[str, str]:
    """The sandbox and allow values Streamlit's frontend gives st.iframe (IFrameUtil.*.js)."""
    js_dir = Path(streamlit.__file__).parent / "static" / "static" / "js"
    (util,) = js_dir.glob("IFrameUtil.*.js")
    lists = re.findall(r"\[((?:`[^`]*`,?)+)\]\.join\(`([^`]*)`\)", util.read_text())
    sandbox, allow = (sep.join(re.findall(r"`([^`]*)`", items)) for items, sep in lists)
    assert "allow-same-origin" in sandbox and "allow-scripts" in sandbox  # what makes it risky
    return sandbox, allow


def _host_page(embed: str, height: int) -> str:
    # As st.iframe(embed, height=...) renders it: srcdoc, Streamlit's sandbox, no sizing script.
    sandbox, allow = _streamlit_frame_attributes()
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body style='margin:0'>"
        "<script>window.hostMarker = 'untouched'; document.cookie = 'session=secret';"
        "localStorage.setItem('token', 'secret');</script>"
        f'<iframe title="st.iframe" scrolling="no" sandbox="{sandbox}" allow="{allow}" '
        f'style="width:100%;height:{height}px;border:none" '
        f'srcdoc="{html.escape(embed, quote=True)}"></iframe></body></html>'
    )


def _graph_frames(page):
    """The embed's frame (same origin as the host) and the graph's frame nested in it."""
    for _ in range(100):
        outer = [f for f in page.frames if f.parent_frame == page.main_frame]
        nested = [f for f in page.frames if outer and f.parent_frame == outer[0]]
        if nested and nested[0].evaluate("() => typeof network !== 'undefined'"):
            return outer[0], nested[0]
        page.wait_for_timeout(100)
    raise AssertionError("no nested frame with a vis network")


_SHOWN_OR_RAN = """([first, names]) => {
    if (names.some((n) => n in window)) return true;
    const tip = document.querySelector('div.vis-tooltip');
    return !!tip && tip.checkVisibility({visibilityProperty: true})
        && tip.innerText.startsWith(first);
}"""


def _assert_nothing_ran(page, dialogs: list[str]) -> None:
    found = {
        i: f.evaluate("(names) => names.filter((n) => n in window)", CANARIES)
        for i, f in enumerate(page.frames)
    }
    assert not any(found.values()), f"hostile markup ran: {found}"
    assert dialogs == [], dialogs
    assert page.evaluate("() => window.hostMarker") == "untouched"


def _targets(frame) -> tuple[list[dict], dict]:
    """Every node and edge with a frame point that hovers it alone, and a point over nothing."""
    return frame.evaluate(
        """() => {
            const box = document.getElementById('mynetwork').getBoundingClientRect();
            const page = (p) => ({x: p.x + box.left, y: p.y + box.top});
            const out = [];
            const pos = network.getPositions();
            for (const id of network.body.data.nodes.getIds()) {
                const dom = network.canvasToDOM(pos[id]);
                out.push({kind: 'node', id, title: network.body.data.nodes.get(id).title,
                          ...page(dom)});
            }
            for (const id of network.body.data.edges.getIds()) {
                const edge = network.body.edges[id];
                const hit = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8].map(t =>
                    network.canvasToDOM(edge.edgeType.getPoint(t))).find(d =>
                    network.getEdgeAt(d) === id && network.getNodeAt(d) === undefined);
                if (!hit) throw new Error('no clear point on edge ' + id);
                out.push({kind: 'edge', id, title: network.body.data.edges.get(id).title,
                          ...page(hit)});
            }
            const empty = {x: 5, y: 5};
            if (network.getNodeAt(empty) !== undefined || network.getEdgeAt(empty) !== undefined)
                throw new Error('the corner of the canvas is not empty');
            return [out, page(empty)];
        }"""
    )


# What script in the graph's frame can reach: each probe's value, or the name of its error.
_REACH = """() => {
    const probe = (f) => { try { return String(f()); } catch (e) { return e.name; } };
    return {
        origin: window.origin,
        parent: probe(() => parent.document.body.innerHTML),
        top: probe(() => top.document.body.innerHTML),
        hostMarker: probe(() => top.hostMarker),
        write: probe(() => { top.pwned = 1; return 'written'; }),
        cookie: probe(() => document.cookie),
        parentCookie: probe(() => parent.document.cookie),
        storage: probe(() => localStorage.getItem('token')),
        topStorage: probe(() => top.localStorage.getItem('token')),
    };
}"""


def _hover(page, frame, box: dict, index: int) -> tuple[dict, float, float]:
    """Move onto target `index` until its tooltip shows, or markup ran: (target, x, y).

    Its place is read again before each try: on a busy machine a move may land before the
    frame has drawn what the last read saw."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        targets, empty = _targets(frame)
        target = targets[index]
        x, y = box["x"] + target["x"], box["y"] + target["y"]
        page.mouse.move(box["x"] + empty["x"], box["y"] + empty["y"])
        page.mouse.move(x - 3, y - 3)
        page.mouse.move(x, y)
        # The tooltip shows this title as text (vis set it with innerText), unless markup ran
        # first: then say so rather than time out.
        first = target["title"].splitlines()[0]
        try:
            frame.wait_for_function(_SHOWN_OR_RAN, arg=[first, CANARIES], timeout=4_000)
            return target, x, y
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _hover_and_click_everything(page, frame, dialogs: list[str]) -> None:
    # The layout settles (and fits the frame) before anything is aimed at, then holds still.
    frame.wait_for_function("() => network.physics.stabilized", timeout=60_000)
    frame.evaluate("() => { network.stopSimulation(); network.setOptions({physics: false}); }")
    box = frame.frame_element().bounding_box()  # the nested frame, in the host page's pixels
    tooltip = frame.locator("div.vis-tooltip")
    targets, empty = _targets(frame)
    assert len(targets) == len(NODES) + len(EDGES)
    for index in range(len(targets)):
        target, x, y = _hover(page, frame, box, index)
        _assert_nothing_ran(page, dialogs)
        # innerText turns each newline into a <br>; any other element came from markup.
        assert tooltip.locator(":not(br)").count() == 0, target
        page.mouse.click(x, y)
        page.mouse.move(box["x"] + empty["x"], box["y"] + empty["y"])
        tooltip.wait_for(state="hidden", timeout=5_000)
    _hover(page, frame, box, 0)
    assert "<img src=x onerror" in tooltip.inner_text() and "href" in tooltip.inner_text()


def test_hostile_graph_text_stays_text_and_the_graph_frame_cannot_reach_the_app():
    require_chromium()
    from playwright.sync_api import sync_playwright

    rendered = render_graph(NODES, EDGES)
    host = _host_page(rendered.embed, rendered.height)
    dialogs: list[str] = []
    errors: list[str] = []
    console: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: console.append(m.text))
            page.route(f"{HOST}**", lambda r: r.fulfill(body=host, content_type="text/html"))
            page.goto(HOST)
            outer, frame = _graph_frames(page)
            frame.locator("canvas").first.wait_for()

            _hover_and_click_everything(page, frame, dialogs)
            page.wait_for_timeout(500)  # time for any late handler (an image error, a timer)
            _assert_nothing_ran(page, dialogs)
            markup = "img, svg, a, iframe, script[src]"
            assert frame.evaluate(f"() => document.querySelectorAll('{markup}').length") == 0
            assert outer.evaluate("() => document.scripts.length") == 0  # the embed runs none

            # The outer frame has the app's origin, as under Streamlit; the graph's frame has none.
            assert outer.evaluate("() => parent.hostMarker") == "untouched"
            reach = frame.evaluate(_REACH)
            assert reach.pop("origin") == "null", reach
            assert set(reach.values()) == {"SecurityError"}, reach
            assert page.evaluate("() => 'pwned' in window") is False
        finally:
            browser.close()
    assert errors == [], errors
    assert not [m for m in console if "alert" in m or "sandboxed" in m], console
