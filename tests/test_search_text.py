"""BM25 text analysis and title linking, against real SQLite and Milvus: the tests that take
`settings` run on a Lite file and on a server over gRPC."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService
from zhixing.core.store import Catalog
from zhixing.core.store.analysis import ANALYSIS_VERSION, bm25_text, readable

BOTH_STORES = True  # tests/conftest.py


def test_english_is_folded_stemmed_and_stripped_of_stop_words() -> None:
    assert bm25_text("The Exies were formed in Los Angeles") == "exi form los angel"
    assert bm25_text("GB/T 34944-2017, V3.2") == "gb t 34944 2017 v3 2"
    assert bm25_text("The Exies were formed", version=0) == "The Exies were formed"
    assert bm25_text("Java应用的会话管理要求", version=1) == "java 应用的会话管理要求"


def test_chinese_is_indexed_as_bigrams_and_content_characters_that_read_back() -> None:
    indexed = bm25_text("Java应用的会话管理要求")
    tokens = indexed.split()
    assert tokens[0] == "java" and all(t.isascii() and t.isalnum() for t in tokens)
    assert len(tokens) == 1 + 8 + 8  # 8 bigrams of 9 characters, 8 of them content (not 的)
    assert readable(indexed) == "java 应用的会话管理要求"
    # Runs apart stay apart; a lone function character is no token; old texts pass unchanged.
    assert readable(bm25_text("中国。国人，的 猫")) == "中国 国人 猫"
    assert readable("java 应用的会话管理要求") == "java 应用的会话管理要求"
    assert bm25_text("的") == ""


def test_a_chinese_name_jieba_cuts_apart_is_found_by_its_bigrams(
    service: KnowledgeService, tmp_path: Path
) -> None:
    # jieba cuts the passage's "凯莱英" as 凯莱/英 but the question's "莱英" whole, so by words the
    # name matches nothing and the shorter passage wins on 研发中心; both hold the bigram 莱英.
    (tmp_path / "a.md").write_text("# 公司\n\n凯莱英的研发中心位于天津。\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# 其他\n\n研发中心在上海。\n", encoding="utf-8")
    service.kbs.create("kb")
    service.builds.add("kb", [tmp_path / "a.md", tmp_path / "b.md"])
    hits = service.search.query("莱英研发中心在哪", ["kb"], strategies=["keyword"])
    assert hits and hits[0].document == "a.md"


def test_a_query_in_another_inflection_finds_the_passage(service: KnowledgeService, tmp_path: Path):
    (tmp_path / "bands.md").write_text(
        "# Bands\n\nThe Exies formed in Los Angeles in 1997.\n", encoding="utf-8"
    )
    (tmp_path / "other.md").write_text("# Other\n\nNothing about music here.\n", encoding="utf-8")
    service.kbs.create("kb")
    service.builds.add("kb", [tmp_path / "bands.md", tmp_path / "other.md"])
    hits = service.search.query("when was the band forming", ["kb"], strategies=["keyword"])
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


def _corpus(folder: Path, records: list[dict]) -> Path:
    """A JSON-lines corpus of {"id", "title", "text"} records."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    return corpus


def test_keyword_links_a_document_the_question_names_by_title(
    settings: Settings, embedder, tmp_path: Path
) -> None:  # noqa: ANN001
    corpus = _corpus(
        tmp_path,
        [
            {"id": "h1", "title": "Haymo of Faversham", "text": "An English Franciscan scholar."},
            {"id": "h2", "title": "Recovery of Aristotle", "text": "Latin translations of Greek."},
            {"id": "h3", "title": "会话管理", "text": "空闲会话在15分钟后失效。"},
        ],
    )
    with KnowledgeService(settings, embedder=embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        svc.builds.add("kb", [corpus])
        titles = svc._home.engine.titles
        kbs = svc.search.scope(["kb"])
        named = titles.named("What language did haymo of faversham's era translate into?", kbs)
        assert [svc._home.catalog.chunks_by_id(named)[c]["source"] for c in named] == ["h1"]
        assert len(titles.named("Java 应用的会话管理有哪些要求", kbs)) == 1  # no word boundaries
        assert titles.named("What is Aristotle known for?", kbs) == []  # a part is not the title
        hits = svc.search.query(
            "What did Haymo of Faversham write?", ["kb"], strategies=["keyword"]
        )
        assert hits[0].document == "h1" and hits[0].strategies["keyword"] == 1
        # The walk finds what the graph links; the title link is keyword's, not graph's.
        walked = svc.search.query(
            "What did Haymo of Faversham write?", ["kb"], strategies=["graph"]
        )
        assert all("keyword" not in h.strategies for h in walked)
        svc.builds.remove("kb", "h1")  # the cache follows the catalog
        assert titles.named("What did Haymo of Faversham write?", kbs) == []


def test_a_passage_links_documents_by_titles_written_as_names(
    service: KnowledgeService, tmp_path: Path
) -> None:
    records = [
        {"id": "f", "title": "Night Harbour", "text": "A 1990 drama directed by John Smith."},
        {"id": "j", "title": "John Smith", "text": "John Smith was born in Halifax."},
        {"id": "i", "title": "Introduction", "text": "An overview of the archive."},
        {"id": "z1", "title": "会话管理要求", "text": "空闲会话应在十五分钟后失效。"},
        {"id": "z2", "title": "概述", "text": "本文概述了各项要求。"},
    ]
    service.kbs.create("kb")
    service.builds.add("kb", [_corpus(tmp_path, records)])
    titles, kbs = service._home.engine.titles, service.search.scope(["kb"])
    source = {
        c: r["source"] for c, r in service._home.catalog.chunks_by_id(list(range(1, 50))).items()
    }

    def linked(text: str) -> list[str]:
        return [source[chunk] for chunk, _ in titles.linked(text, kbs)]

    assert linked("A 1990 drama directed by John Smith.") == ["j"]
    assert linked("directed by john smith") == []  # a name is written as one
    assert linked("This introduction explains the archive.") == []
    assert linked("详见会话管理要求。本节概述如下。") == ["z1"]  # 概述 is a word, not a name


def test_a_multi_hop_question_reaches_the_page_the_top_hit_names(
    service: KnowledgeService, tmp_path: Path
) -> None:
    """The film's page names its director; the director's page shares no word with the
    question but "born", which five other pages use more: the link brings it to rank 5."""
    records = [
        {
            "id": "film",
            "title": "Night Harbour",
            "text": "Night Harbour is a 1990 drama film "
            "directed by Maren Vollstedt, about a harbour town at night.",
        },
        {
            "id": "director",
            "title": "Maren Vollstedt",
            "text": "Maren Vollstedt is a German filmmaker. Vollstedt was born in Kiel.",
        },
    ]
    records += [
        {
            "id": f"other{n}",
            "title": f"Harbour director {n}",
            "text": f"The harbour director "
            f"{n} of the film festival was born in a harbour town; the director was born there.",
        }
        for n in range(6)
    ]
    service.kbs.create("kb")
    service.builds.add("kb", [_corpus(tmp_path, records)])
    question = "Where was the director of the film Night Harbour born?"
    plain = service.search.query(question, ["kb"], strategies=["basic"])
    assert "director" not in [h.document for h in plain[:5]]  # the lists alone miss it
    hits = service.search.query(question, ["kb"])
    assert hits[0].document == "film"
    assert hits[4].document == "director" and hits[4].strategies == {"link": 1}


def test_a_knowledge_base_built_before_the_bigrams_is_still_found_beside_a_new_one(
    service: KnowledgeService, tmp_path: Path, monkeypatch
) -> None:  # noqa: ANN001
    import zhixing.core.store.catalog as catalog_module
    import zhixing.core.store.vectors as vectors_module

    (tmp_path / "old.md").write_text("# 旧库\n\n会话令牌在注销后必须失效。\n", encoding="utf-8")
    (tmp_path / "new.md").write_text("# 新库\n\n会话令牌至少有六十四位的熵。\n", encoding="utf-8")
    # As a release before built it: analysis 1 in a collection with Milvus's jieba tokenizer.
    monkeypatch.setattr(catalog_module, "ANALYSIS_VERSION", 1)
    monkeypatch.setattr(vectors_module, "TOKENIZER", "jieba")
    service.kbs.create("old")
    service.builds.add("old", [tmp_path / "old.md"])
    monkeypatch.undo()
    service.kbs.create("new")
    service.builds.add("new", [tmp_path / "new.md"])
    assert service._home.catalog.get_kb("old").analysis == 1
    assert service._home.catalog.get_kb("new").analysis == ANALYSIS_VERSION == 2
    old = service.search.query("注销后的会话令牌", ["old"], strategies=["keyword"])
    assert [h.document for h in old] == ["old.md"]
    both = service.search.query("会话令牌", ["old", "new"], strategies=["keyword"])
    assert sorted(h.document for h in both) == ["new.md", "old.md"]
