"""BM25 text analysis and title linking, against real Milvus Lite and SQLite."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from core.config import Settings
from core.service import KnowledgeService
from core.store import Catalog
from core.store.analysis import ANALYSIS_VERSION, bm25_text


def test_english_is_folded_stemmed_and_stripped_of_stop_words_chinese_is_kept() -> None:
    assert bm25_text("The Exies were formed in Los Angeles") == "exi form los angel"
    assert bm25_text("Java应用的会话管理要求") == "java 应用的会话管理要求"
    assert bm25_text("GB/T 34944-2017, V3.2") == "gb t 34944 2017 v3 2"
    assert bm25_text("The Exies were formed", version=0) == "The Exies were formed"


def test_a_query_in_another_inflection_finds_the_passage(service: KnowledgeService, tmp_path: Path):
    (tmp_path / "bands.md").write_text(
        "# Bands\n\nThe Exies formed in Los Angeles in 1997.\n", encoding="utf-8"
    )
    (tmp_path / "other.md").write_text("# Other\n\nNothing about music here.\n", encoding="utf-8")
    service.create_kb("kb")
    service.add("kb", [tmp_path / "bands.md", tmp_path / "other.md"])
    hits = service.search("when was the band forming", ["kb"], strategies=["keyword"])
    assert hits and hits[0].document == "bands.md"  # "forming" meets "formed" only stemmed


def test_a_catalog_from_before_the_analysis_keeps_its_raw_index(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    with sqlite3.connect(path) as db:  # the knowledge_bases table as an older Zhixing wrote it
        db.execute(
            "CREATE TABLE knowledge_bases (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT"
            " NULL UNIQUE, description TEXT NOT NULL DEFAULT '', tags TEXT NOT NULL DEFAULT"
            " '[]', build_mode TEXT NOT NULL, embedding TEXT NOT NULL, dimension INTEGER NOT"
            " NULL, created_at REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO knowledge_bases (name, build_mode, embedding, dimension, created_at)"
            " VALUES ('old', 'index', 'builtin', 512, 0)"
        )
    catalog = Catalog(path)
    try:
        assert catalog.get_kb("old").analysis == 0  # its index holds raw text: query it raw
        assert catalog.create_kb("new").analysis == ANALYSIS_VERSION
    finally:
        catalog.close()


def test_keyword_links_a_document_the_question_names_by_title(
    settings: Settings, embedder, tmp_path: Path
) -> None:  # noqa: ANN001
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {"id": "h1", "title": "Haymo of Faversham", "text": "An English Franciscan scholar."},
        {"id": "h2", "title": "Recovery of Aristotle", "text": "Latin translations of Greek."},
        {"id": "h3", "title": "会话管理", "text": "空闲会话在15分钟后失效。"},
    ]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    with KnowledgeService(settings, embedder=embedder) as svc:
        svc.create_kb("kb", mode="graph")
        svc.add("kb", [corpus])
        titles = svc._engine.titles
        kbs = svc.scope(["kb"])
        named = titles.named("What language did haymo of faversham's era translate into?", kbs)
        assert [svc._catalog.chunks_by_id(named)[c]["source"] for c in named] == ["h1"]
        assert len(titles.named("Java 应用的会话管理有哪些要求", kbs)) == 1  # no word boundaries
        assert titles.named("What is Aristotle known for?", kbs) == []  # a part is not the title
        hits = svc.search("What did Haymo of Faversham write?", ["kb"], strategies=["keyword"])
        assert hits[0].document == "h1" and hits[0].strategies["keyword"] == 1
        # The walk finds what the graph links; the title link is keyword's, not graph's.
        walked = svc.search("What did Haymo of Faversham write?", ["kb"], strategies=["graph"])
        assert all("keyword" not in h.strategies for h in walked)
        svc.remove("kb", "h1")  # the cache follows the catalog
        assert titles.named("What did Haymo of Faversham write?", kbs) == []
