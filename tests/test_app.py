"""The Streamlit shell, driven by AppTest: navigation, sidebar, empty state, the sample build."""

from __future__ import annotations

import pytest

from tests.pages import open_page, run
from zhixing.app.services import knowledge_service


@pytest.fixture
def home(app_home):
    return app_home


def test_first_start_shows_the_empty_state_and_the_offline_mode(home):
    at = open_page()
    assert any("还没有知识库" in i.value for i in at.info)
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "内置离线模式" in sidebar and "builtin" in sidebar


@pytest.mark.slow
def test_the_sample_button_builds_a_searchable_knowledge_base(home):
    at = open_page()
    at.button(key="build-sample").click()
    run(at)
    svc = knowledge_service()  # the app's own service: it holds the home's Milvus Lite file
    kbs = {kb.name: kb for kb in svc.kbs.all()}
    assert "sample" in kbs and kbs["sample"].mode == "graph"
    documents, chunks = svc._home.catalog.kb_counts(kbs["sample"].id)
    assert documents == 3 and chunks > 4
    assert svc.search.query("会话固定", ["sample"])[0].document.endswith("zh.md")
    assert "sample · 3 篇文档" in " ".join(c.value for c in at.sidebar.caption)
