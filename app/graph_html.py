"""Entity subgraph -> self-contained pyvis HTML (the only module that imports pyvis).

The HTML must work on an intranet with no internet: pyvis 0.3.2 inlines vis-network with
`cdn_resources="in_line"`, but its template still links bootstrap from cdn.jsdelivr.net, so every
tag that loads from http(s) is cut out after rendering, and `render_graph` refuses to return HTML
that still points outside.

Names, types and descriptions come from documents and LLM output, so they are hostile until
shown otherwise: they reach the page only as JSON inside the script block (pyvis writes the data
with Jinja's `tojson`, which escapes `<`, `>`, `&` and `'`, so `</script>` in a name cannot end the
block, and `render_graph` refuses a page where the data holds a raw `<` or `>`), vis-network 9
draws labels on the canvas and sets a string tooltip with `innerText`, never as HTML; the legend
is HTML-escaped. When a tooltip holds the letters `href`, pyvis swaps in its own popup that sets
the title as `innerHTML`; that branch is cut out after rendering, and `render_graph` refuses a
page whose script still writes anything but its fixed loading-bar text as HTML.

Labels: vis-network skips a label smaller than a few pixels on screen, and a graph of a hundred
nodes or more is drawn at a fifth of its size to fit the frame, so at first sight no node had a
name. The `LABELLED` best-connected nodes (and a searched one) keep their names readable: a small
script of the page's own sets their font so that it stays about `LABEL_PX` pixels on screen at
any zoom, while the other names appear as the user zooms in.

`RenderedGraph.embed` wraps the page in an `<iframe sandbox="allow-scripts" srcdoc=...>`: st.iframe
runs HTML with `allow-same-origin`, i.e. as the app's origin, so the graph's script runs one frame
further in, with an opaque origin that can reach neither the app's DOM nor its cookies or storage.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import math
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jinja2 import Environment, FileSystemLoader
from pyvis.network import Network

from ..core.models.graph import GraphEdgeView, GraphNodeView

__all__ = [
    "RenderedGraph",
    "labelled",
    "node_size",
    "render_graph",
    "type_colours",
]

# Fixed colours for the entity types the extractors produce, so a type looks the same everywhere.
KNOWN_COLOURS: dict[str, str] = {
    "concept": "#4e79a7",
    "weakness": "#e15759",
    "vulnerability": "#ff9da7",
    "standard": "#59a14f",
    "clause": "#8cd17d",
    "technology": "#f28e2b",
    "control": "#76b7b2",
    "encryption": "#b07aa1",
    "organization": "#edc948",
    "person": "#9c755f",
    "api": "#499894",
    "product": "#d37295",
}
# Other types take the first of these that no type in the same graph uses yet.
EXTRA_COLOURS = (
    "#79706e",
    "#a0cbe8",
    "#ffbe7d",
    "#d4a6c8",
    "#86bcb6",
    "#f1ce63",
    "#b6992d",
    "#fabfd2",
    "#bab0ac",
    "#d7b5a6",
    "#2f4b7c",
    "#665191",
)
SYMMETRIC = {"related_to"}  # drawn without an arrow, as stored (core.store.graph)
LABELLED = 30  # nodes whose names stay readable however far the graph is zoomed out
LABEL_PX = 13  # their names' size on screen, in CSS pixels

_EXTERNAL_TAG = re.compile(
    r"<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//[^>]*>(?:\s*</script>)?",
    re.IGNORECASE,
)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.IGNORECASE)
_OUTSIDE = re.compile(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", re.IGNORECASE)
# The data lines pyvis's template writes: `nodes = new vis.DataSet([...]);`, one line each.
_DATA_LINE = re.compile(r"^\s*(?:nodes|edges) = new vis\.DataSet\((.*)\);\s*$", re.MULTILINE)
# pyvis's "custom popup" branch, emitted when a title holds `href`: from its comment to the end of
# `function showPopup(...) {...}`, the one that does `popup.innerHTML = nodeData[0].title`.
_POPUP_START = "// make a custom popup"
_POPUP_LAST = "function showPopup("
_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)
# Ways script can turn a string into markup.
_HTML_SINK = re.compile(
    r"\.(?:inner|outer)HTML\s*(?:\+?=(?!=))\s*([^;\n]*)|insertAdjacentHTML|document\.write"
    r"|createContextualFragment|DOMParser|srcdoc",
    re.IGNORECASE,
)
# The only ones the template may keep: the loading bar's percentage (graphs over 100 nodes).
_FIXED_HTML = {"Math.round(widthFactor*100) + '%'", "'100%'"}
# The graph's frame may run script, nothing else: no same-origin, forms, popups, modals, top nav.
SANDBOX = "allow-scripts"


@dataclass(frozen=True)
class RenderedGraph:
    html: str
    legend: list[tuple[str, str]]  # (entity type, colour), in the order the types first appear
    height: int = 650  # CSS pixels the page is drawn for

    @property
    def embed(self) -> str:
        """A script-free page holding `html` in a frame sandboxed without `allow-same-origin`.

        Show it with `st.iframe(rendered.embed, height=rendered.height)`: an int height, since
        `"content"` makes Streamlit append its own sizing script to the outer frame.
        """
        return (
            '<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
            "html,body{margin:0;padding:0;overflow:hidden}"
            f"iframe{{display:block;width:100%;height:{int(self.height)}px;border:0}}"
            f'</style></head><body><iframe sandbox="{SANDBOX}" title="entity graph" '
            f'srcdoc="{html.escape(self.html, quote=True)}"></iframe></body></html>'
        )


def type_colours(types: Iterable[str]) -> dict[str, str]:
    """Give each type a colour: known types their fixed one, others distinct spare ones."""
    distinct = sorted(set(types))
    out = {t: KNOWN_COLOURS[t] for t in distinct if t in KNOWN_COLOURS}
    spare = [c for c in EXTRA_COLOURS if c not in out.values()]
    for t in (t for t in distinct if t not in out):
        # A stable colour even when the spare palette runs out (many custom types).
        out[t] = spare.pop(0) if spare else f"#{zlib.crc32(t.encode()) & 0xFFFFFF:06x}"
    return out


def node_size(degree: int) -> float:
    """Grow with degree, slowly enough that hubs don't cover the graph."""
    return round(10 + 8 * math.log1p(max(degree, 0)), 2)


def render_graph(
    nodes: Sequence[GraphNodeView],
    edges: Sequence[GraphEdgeView],
    *,
    height: int = 650,
    highlight: Iterable[int] = (),
) -> RenderedGraph:
    """Render nodes and edges as one HTML page with vis-network inlined and nothing remote.

    `highlight` nodes (a searched entity) get a thick border. Edges whose ends are not among the
    nodes are dropped.
    """
    colours = type_colours(n.type for n in nodes)
    marked = set(highlight)
    net = Network(height=f"{height - 20}px", width="100%", directed=True, cdn_resources="in_line")
    net.templateEnv = _templates(net.template_dir)  # compiled once, not on every render
    for n in nodes:
        net.add_node(
            n.id,
            label=n.name,
            title=_tooltip(n),
            color=colours[n.type],
            size=node_size(n.degree),
            borderWidth=4 if n.id in marked else 1,
        )
    ids = {n.id for n in nodes}
    for e in edges:
        if e.source in ids and e.target in ids:
            net.add_edge(
                e.source,
                e.target,
                label=e.type,
                title=e.description or e.type,
                arrows="" if e.type in SYMMETRIC else "to",
            )
    net.options = _OPTIONS
    legend = list(dict.fromkeys((n.type, colours[n.type]) for n in nodes))
    page = _with_labels(net.generate_html(), labelled(nodes, marked))
    return RenderedGraph(_offline(page, legend), legend, height)


def labelled(nodes: Sequence[GraphNodeView], highlight: Iterable[int] = ()) -> list[int]:
    """The nodes whose names stay readable when the graph is zoomed out: the highlighted ones,
    then the best connected (ties by name), `LABELLED` in all."""
    marked = set(highlight)
    ranked = sorted(nodes, key=lambda n: (n.id not in marked, -n.degree, n.name))
    return [n.id for n in ranked[: max(LABELLED, len(marked))]]


def _with_labels(page: str, ids: Sequence[int]) -> str:
    """Add the script that keeps the names of `ids` about LABEL_PX pixels on screen.

    vis-network sizes a label in the graph's units, so it shrinks with the zoom (and past
    `drawThreshold` is not drawn at all); its `maxVisible` does not cap the drawn size. So on
    each zoom, and once the layout settles and fits, the font of these nodes is set to LABEL_PX
    divided by the scale, never below the other nodes' 14. The ids are integers: the script
    holds no text from a document.
    """
    script = (
        "<script>(function () {"
        f"var ids = {json.dumps([int(i) for i in ids])}, px = {LABEL_PX}, least = {_FONT_SIZE};"
        "function label() {"
        "var size = Math.max(least, px / network.getScale());"
        "nodes.update(ids.map(function (id) { return {id: id, font: {size: size}}; }));"
        "}"
        'network.on("zoom", label);'
        'network.once("stabilizationIterationsDone", label);'
        "label();"
        "})();</script>"
    )
    return page.replace("</body>", script + "</body>", 1)


def _tooltip(node: GraphNodeView) -> str:
    # vis-network 9 sets a string title as innerText, never HTML (an HTML title would run a
    # hostile name's markup; pyvis's own popup would, see _without_custom_popup), so newlines
    # separate the lines and the CSS keeps them.
    lines = [node.name, f"类型 type: {node.type}", f"度 degree: {node.degree}"]
    if node.description:
        lines.append(_wrap(node.description[:400]))
    return "\n".join(lines)


def _wrap(text: str, width: int = 60) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


# The page needs nothing but its own inline script and style (and vis-network's data: images):
# a script that got in anyway could not send what it reads anywhere.
_CSP = (
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    'font-src data:">'
)


def _offline(page: str, legend: Sequence[tuple[str, str]]) -> str:
    page = _EMPTY_HEADING.sub("", _EXTERNAL_TAG.sub("", page))
    page = _without_custom_popup(page)
    page = page.replace("<body>", "<body>" + _legend_html(legend), 1)
    page = page.replace("</head>", f"{_CSP}<style>{_CSS}</style></head>", 1)
    if _OUTSIDE.search(page):
        raise RuntimeError("The graph HTML still loads something from the internet.")
    _check_data_is_inert(page)
    _check_no_markup_from_data(page)
    return page


def _after_data(page: str) -> int:
    """Where the template's own code resumes after the data lines (names may hold anything)."""
    return max((m.end() for m in _DATA_LINE.finditer(page)), default=0)


def _without_custom_popup(page: str) -> str:
    """Cut pyvis's href popup, so vis-network's own text tooltip shows every title.

    The branch's CSS, which hides that tooltip, stays: `_CSS` shows it again.
    """
    start = page.find(_POPUP_START, _after_data(page))
    if start < 0:
        return page
    last = page.find(_POPUP_LAST, start)
    body = page.find("{", last) if last >= 0 else -1
    depth = 0
    for i in range(body, len(page)) if body >= 0 else ():
        depth += {"{": 1, "}": -1}.get(page[i], 0)
        if depth == 0:  # the template's code here holds no braces in strings or comments
            return page[:start] + page[i + 1 :]
    raise RuntimeError("pyvis's custom popup is not where expected; it would show titles as HTML.")


@functools.cache
def _templates(folder: str) -> Environment:
    """pyvis's template folder as one Jinja environment, which keeps the compiled template: a
    Network makes its own, and compiling the template was half of each render (60 of 135 ms)."""
    return Environment(loader=FileSystemLoader(folder))


def _check_no_markup_from_data(page: str) -> None:
    """Refuse a page whose script may write anything but fixed text as HTML (a title, say).

    Pages differ in their data, seldom in their code (vis-network's 500 kB among it), so a
    code that passed is remembered by its digest and not read again."""
    code = _DATA_LINE.sub("", page)  # data is inert JSON (checked above), whatever its text
    digest = hashlib.sha256(code.encode()).hexdigest()
    if digest in _INERT_CODE:
        return
    for script in _SCRIPT.findall(code):
        for sink in _HTML_SINK.finditer(script):
            if sink.group(1) is None or sink.group(1).strip() not in _FIXED_HTML:
                raise RuntimeError(
                    f"The graph HTML writes data as markup ({sink.group(0).strip()!r})."
                )
    _INERT_CODE.add(digest)


_INERT_CODE: set[str] = set()


def _check_data_is_inert(page: str) -> None:
    """Refuse a page whose node or edge data could close its script block or open a tag."""
    data = _DATA_LINE.findall(page)
    if len(data) != 2:
        raise RuntimeError("The graph HTML does not hold its node and edge data where expected.")
    if any("<" in line or ">" in line for line in data):
        raise RuntimeError("The graph data holds raw '<' or '>'; it would not stay inert in HTML.")


def _legend_html(legend: Sequence[tuple[str, str]]) -> str:
    items = "".join(
        f'<span class="zx-type"><i style="background:{colour}"></i>{html.escape(t)}</span>'
        for t, colour in legend
    )
    return f'<div class="zx-legend">{items}</div>'


_CSS = (
    "body{margin:0;font-family:sans-serif}"
    ".zx-legend{font-size:13px;padding:4px 2px}"
    ".zx-type{margin-right:12px;white-space:nowrap}"
    ".zx-type i{display:inline-block;width:11px;height:11px;border-radius:50%;"
    "margin-right:4px;vertical-align:middle}"
    # display:block undoes the href branch's CSS that hides vis's tooltip (vis hides it by visibility).
    "div.vis-tooltip{display:block;white-space:pre-wrap;max-width:480px}"
)

_FONT_SIZE = 14
_OPTIONS = {
    "physics": {
        "enabled": True,
        "solver": "forceAtlas2Based",
        "forceAtlas2Based": {"gravitationalConstant": -60, "springLength": 110},
        "stabilization": {"enabled": True, "iterations": 200},
    },
    "interaction": {"hover": True, "tooltipDelay": 150, "navigationButtons": False},
    "nodes": {
        "shape": "dot",
        # A white outline keeps a name readable across the edges under it.
        "font": {"size": _FONT_SIZE, "strokeWidth": 3, "strokeColor": "#ffffff"},
        # A name smaller than this on screen is mush: it waits until the user zooms in.
        "scaling": {"label": {"drawThreshold": 7}},
    },
    "edges": {
        "font": {"size": 10, "align": "middle", "color": "#555555"},
        "color": {"color": "#b0b0b0", "highlight": "#333333"},
        "smooth": {"enabled": True, "type": "dynamic"},
    },
}
