"""The graph page (图谱), driven by AppTest on a real knowledge base built from the samples."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import open_page, run
from zhixing.app.strings import graph as T
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "app" / "samples").glob("*.md"))


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder) -> Path:
    """A home with a graph-mode knowledge base `kb` and an index-mode one `plain`, built once."""
    home = tmp_path_factory.mktemp("graph-page") / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        svc.builds.add("kb", SAMPLES)
        svc.kbs.create("plain", mode="index")
        svc.builds.add("plain", SAMPLES[:1])
        svc.kbs.create("kb-en", mode="graph")
        svc.builds.add("kb-en", [p for p in SAMPLES if p.name.endswith("-en.md")])
    return home


@pytest.fixture
def home(built, app_home):
    # A copy per test: the app opens the files itself, and no test can leave state for the next.
    shutil.copytree(built, app_home)
    return app_home


def _graph_html(at: AppTest) -> str:
    """The graph page inside the sandboxed frame the page embeds (app/graph_html.py)."""
    frames = at.get("iframe")
    assert len(frames) == 1, "the graph is drawn in one iframe"
    outer = frames[0].proto.srcdoc
    inner = re.search(r'<iframe sandbox="allow-scripts"[^>]* srcdoc="([^"]*)"', outer)
    assert inner, "the graph runs in a nested frame sandboxed to scripts only"
    return html.unescape(inner.group(1))


def _node_labels(page: str) -> set[str]:
    start = page.index("nodes = new vis.DataSet(") + len("nodes = new vis.DataSet(")
    return {n["label"] for n in json.JSONDecoder().raw_decode(page, start)[0]}


def _node_picker(at: AppTest):
    return next(s for s in at.selectbox if s.label == T.NODE_PICK)


def _texts(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_without_a_knowledge_base_the_page_shows_the_empty_state(app_home):
    at = open_page("graph")
    assert any("还没有知识库" in i.value for i in at.info)
    assert not at.get("iframe")


def test_the_graph_of_a_knowledge_base_is_drawn_with_its_node_names(home):
    at = open_page("graph")
    labels = _node_labels(_graph_html(at))
    assert {"bcrypt", "会话标识", "MD5"} <= labels
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", _graph_html(at), re.I)
    assert "technology" in _graph_html(at)  # the legend, drawn above the network


def test_the_node_cap_says_how_many_nodes_were_left_out(home):
    at = open_page("graph")
    at.number_input(key="graph-cap").set_value(10)
    run(at)
    assert len(_node_labels(_graph_html(at))) == 10
    assert any("未显示" in i.value for i in at.info)


def test_filtering_by_type_and_degree_keeps_only_matching_nodes(home):
    at = open_page("graph")
    at.multiselect[0].set_value(["technology"])
    run(at)
    options = _node_picker(at).options
    assert options and all("technology" in o for o in options)
    at.number_input(key="graph-min-degree").set_value(100)
    run(at)
    assert any(T.NOTHING_SHOWN in i.value for i in at.info)


def test_picking_a_node_shows_its_type_description_relations_and_chunks(home):
    at = open_page("graph")
    picker = _node_picker(at)
    picker.select(next(o for o in picker.options if o.startswith("bcrypt")))
    run(at)
    text = _texts(at)
    assert "### bcrypt" in text and "technology" in text and "Argon2id" in text
    assert at.dataframe, "the relations table"
    labels = [e.label for e in at.expander]
    assert any("java-secure-coding-en.md" in label for label in labels)


def test_searching_an_entity_shows_its_neighbourhood_and_selects_it(home):
    at = open_page("graph")
    at.text_input(key="graph-search").input("BCRYPT")
    at.slider(key="graph-hops").set_value(1)
    run(at)
    labels = _node_labels(_graph_html(at))
    assert "bcrypt" in labels and len(labels) < 40
    assert _node_picker(at).value is not None
    assert "### bcrypt" in _texts(at)
    assert any("邻域" in c.value for c in at.caption)


def test_an_unknown_entity_gets_a_readable_message_not_a_traceback(home):
    at = open_page("graph")
    at.text_input(key="graph-search").input("不存在的实体 xyz")
    run(at)
    assert any("不存在的实体 xyz" in w.value for w in at.warning)
    assert at.get("iframe"), "the whole graph is still shown"


def test_an_index_mode_knowledge_base_explains_that_the_graph_needs_graph_mode(home):
    at = open_page("graph")
    at.selectbox(key="graph-kb").select("plain")
    run(at)
    assert any("增强知识图谱索引" in i.value for i in at.info)
    assert not at.get("iframe")


@pytest.mark.parametrize("kb", ["kb-en", "kb"])
def test_the_search_example_names_an_entity_of_the_knowledge_base_shown(home, kb):
    """Issue 17: the example was "SQL 注入" whatever the base, and found nothing in English."""
    at = open_page("graph")
    at.selectbox(key="graph-kb").select(kb)
    run(at)
    placeholder = at.text_input(key="graph-search").placeholder
    example = placeholder.rsplit("例如 ", 1)[1]
    assert example == _node_picker(at).options[0].split(" · ")[0]  # the best connected
    at.text_input(key="graph-search").input(example)
    run(at)
    assert not at.warning, "the example finds its entity"
    assert any("邻域" in c.value for c in at.caption)
