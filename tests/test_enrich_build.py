"""Both build modes offline, on real Milvus Lite and SQLite: questions, entities, exact removal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_docs
from zhixing.core.models.graph import GraphStats

ZH = """# 注入防护规范

## 1 SQL注入

SQL注入属于注入攻击。应用程序必须使用参数化查询访问数据库。
禁止通过拼接用户输入构造 SQL 语句。参数化查询可以防止SQL注入。

## 2 跨站脚本

跨站脚本攻击是一种注入攻击。输出到页面的数据应当进行输出编码。
"""

EN = """# Injection Prevention Notes

## SQL injection

SQL injection is a type of injection attack. Applications must use parameterized queries.
Parameterized queries prevent SQL injection. Never concatenate user input into SQL strings.

## Logging

Security events must be logged with a timestamp and the user id.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs", {"zh.md": ZH, "en.md": EN})


def _count(service, sql: str, *params) -> int:
    return service._home.catalog.db.execute(sql, params).fetchone()[0]


def _vectors(service, name: str, kind: str) -> int:
    kb = service.kbs.get(name)
    return service._home.vectors.count(kb.dimension, kb=kb.id, kind=kind)


def test_index_mode_offline_indexes_each_chunk_by_its_text_alone(service, docs):
    service.kbs.create("idx", mode="index")
    report = service.builds.add("idx", [docs])
    # Heuristic questions made retrieval worse on every set measured (issue 15): an offline
    # build writes none, embeds only the chunks and extracts no entities.
    assert report.ok and report.questions == 0 and report.chunks > 0
    assert _count(service, "SELECT COUNT(*) FROM questions") == 0
    assert _vectors(service, "idx", "question") == 0
    assert _count(service, "SELECT COUNT(*) FROM entities") == 0
    assert _vectors(service, "idx", "chunk") == report.chunks
    hits = service.search.query("参数化查询防止 SQL 注入", ["idx"], top_k=3)
    assert hits and "参数化查询" in hits[0].text


def test_graph_mode_builds_entities_and_relations_with_mentions(service, docs):
    service.kbs.create("kg", mode="graph")
    report = service.builds.add("kg", [docs])
    assert report.ok
    stats = service.graph.stats("kg")
    assert stats.entities > 3 and stats.relations > 0
    assert stats.entities == _vectors(service, "kg", "entity")
    view = service.graph.neighbourhood("kg", "SQL注入", hops=1)
    names = {n.name for n in view.nodes}
    assert any("参数化查询" in n or "parameterized" in n.lower() for n in names)
    assert view.edges and all(n.chunks for n in view.nodes)


def test_sql_injection_in_two_languages_becomes_one_entity(service, docs):
    service.kbs.create("kg", mode="graph")
    service.builds.add("kg", [docs])
    view = service.graph.neighbourhood("kg", "sql injection", hops=0)
    assert len(view.nodes) == 1
    node = view.nodes[0]
    spellings = {node.name.lower(), *(a.lower() for a in node.aliases)}
    assert {"sql injection", "sql注入"} <= spellings
    assert view == service.graph.neighbourhood("kg", "SQL注入", hops=0)


def test_removing_a_document_leaves_no_orphan_entity_relation_question_or_vector(service, docs):
    service.kbs.create("kg", mode="graph")
    service.builds.add("kg", [docs])
    before = service.graph.stats("kg").entities
    service.builds.remove("kg", "zh.md")

    assert (
        _count(
            service,
            "SELECT COUNT(*) FROM questions q LEFT JOIN chunks c"
            " ON c.id = q.chunk_id WHERE c.id IS NULL",
        )
        == 0
    )
    assert (
        _count(
            service,
            "SELECT COUNT(*) FROM entities e WHERE NOT EXISTS"
            " (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)",
        )
        == 0
    )
    assert (
        _count(
            service,
            "SELECT COUNT(*) FROM relations r WHERE NOT EXISTS"
            " (SELECT 1 FROM relation_mentions m WHERE m.relation_id = r.id)",
        )
        == 0
    )
    assert (
        _count(
            service,
            "SELECT COUNT(*) FROM entity_mentions m LEFT JOIN chunks c"
            " ON c.id = m.chunk_id WHERE c.id IS NULL",
        )
        == 0
    )
    stats = service.graph.stats("kg")
    assert 0 < stats.entities < before
    assert _vectors(service, "kg", "entity") == stats.entities
    assert _vectors(service, "kg", "question") == 0  # offline questions are not indexed
    assert _vectors(service, "kg", "chunk") == _count(service, "SELECT COUNT(*) FROM chunks")

    # The surviving entity keeps only what the remaining document says about it.
    node = service.graph.neighbourhood("kg", "SQL injection", hops=0).nodes[0]
    assert "注入" not in node.description
    assert all(alias != "SQL注入" for alias in node.aliases)

    service.builds.remove("kg", "en.md")
    assert service.graph.stats("kg") == GraphStats(entities=0, relations=0, types={})
    assert _vectors(service, "kg", "entity") == _vectors(service, "kg", "question") == 0


def test_rebuilding_an_unchanged_graph_changes_nothing(service, docs):
    service.kbs.create("kg", mode="graph")
    service.builds.add("kg", [docs])
    stats = service.graph.stats("kg")
    again = service.builds.add("kg", [docs])
    assert again.added == [] and service.graph.stats("kg") == stats


def test_a_symmetric_relation_is_stored_once_whichever_way_it_was_said(service, docs):
    service.kbs.create("kb", mode="index")
    service.builds.add("kb", [docs])
    kb = service.kbs.get("kb")
    chunk_a, chunk_b = (
        r[0] for r in service._home.catalog.db.execute("SELECT id FROM chunks ORDER BY id LIMIT 2")
    )
    graph = service._home.graph
    a = graph.create_entity(kb.id, key="alpha", type_="concept", name="Alpha", attributes={})
    b = graph.create_entity(kb.id, key="beta", type_="concept", name="Beta", attributes={})
    first = graph.relate(kb.id, a, b, "related_to", chunk_a, "")
    second = graph.relate(kb.id, b, a, "related_to", chunk_b, "")
    directed = graph.relate(kb.id, b, a, "prevents", chunk_b, "")
    graph.refresh([a, b], [first, directed])
    assert first == second != directed
    _, edges = graph.neighbourhood(kb.id, [a], hops=1)
    assert sorted((e.type, e.weight) for e in edges) == [("prevents", 1.0), ("related_to", 2.0)]
