"""The Streamlit app, driven by AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.config import Settings
from core.service import KnowledgeService

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A temp home for the app; the app's cached service is closed afterwards (frees the lock)."""
    from app.services import knowledge_service

    home = tmp_path / "home"
    monkeypatch.setenv("ZHIXING_HOME", str(home))
    knowledge_service.clear()
    yield home
    if (home / "catalog.db").exists():
        knowledge_service().close()
    knowledge_service.clear()


def _run() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_home_page_explains_how_to_start_when_empty(home):
    at = _run()
    assert at.title[0].value == "知行 Zhixing"
    assert "No knowledge base yet" in at.info[0].value


def test_home_page_lists_knowledge_bases(home, embedder):
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.create_kb("安全基线", tags=["java"], description="内部基线")
    at = _run()
    table = at.dataframe[0].value
    assert list(table["name"]) == ["安全基线"]
    assert list(table["documents"]) == [0]
