"""The offline build on real SQLite and Milvus, a Lite file and a server over gRPC, and on a
catalog on PostgreSQL (each test runs on all three): build, search, re-add, update, remove,
delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import write_docs
from zhixing.core.errors import NotFoundError, StoreError
from zhixing.core.search import STRATEGIES

# tests/conftest.py: every test here runs on the Lite file, the server, and a team's set (a
# catalog on PostgreSQL beside the server)
STORE_BACKENDS = ("lite", "server", "postgres")

POLICY = """# 密码安全基线

## 1 口令存储

系统必须使用 bcrypt 或 Argon2 对口令进行哈希存储。禁止以明文形式保存口令。

## 2 会话管理

会话令牌应当在用户注销后立即失效。会话超时时间不得超过 30 分钟。
"""

GUIDE = """SQL injection prevention

Use parameterized queries (prepared statements) for every database access.
Never build SQL strings by concatenating user input.
Stored procedures are safe only when they do not build dynamic SQL.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs", {"policy.md": POLICY, "sql.txt": GUIDE})


def _vector_count(service, name: str) -> int:
    kb = service.kbs.get(name)
    return service._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk")


def test_a_built_knowledge_base_answers_chinese_and_english_queries(service, docs):
    service.kbs.create("base")
    report = service.builds.add("base", [docs])
    assert report.ok and sorted(report.added) == ["policy.md", "sql.txt"]
    chunks = sum(d.chunks for d in service.kbs.documents("base"))
    assert report.chunks == chunks == _vector_count(service, "base") > 0

    hits = service.search.query("口令应该怎么存储", ["base"], top_k=3)
    assert hits[0].document == "policy.md"
    assert "bcrypt" in hits[0].text
    assert {"basic", "keyword"} <= set(hits[0].strategies) <= set(STRATEGIES)
    hits = service.search.query("prepared statements", ["base"], top_k=3)
    assert hits[0].document == "sql.txt" and hits[0].page == 1


def test_re_adding_unchanged_files_is_a_no_op(service, docs):
    service.kbs.create("base")
    first = service.builds.add("base", [docs])
    count = _vector_count(service, "base")
    again = service.builds.add("base", [docs])
    assert again.added == [] and sorted(again.skipped) == sorted(first.added)
    assert _vector_count(service, "base") == count


def test_a_changed_file_replaces_its_old_version(service, docs):
    service.kbs.create("base")
    service.builds.add("base", [docs])
    (docs / "sql.txt").write_text("Output encoding stops cross-site scripting (XSS).\n", "utf-8")
    report = service.builds.add("base", [docs / "sql.txt"])
    assert report.replaced == ["sql.txt"]
    texts = [h.text for h in service.search.query("parameterized queries", ["base"], top_k=10)]
    assert not any("parameterized" in t for t in texts)
    hits = service.search.query("XSS output encoding", ["base"], top_k=1)
    assert hits[0].document == "sql.txt" and "XSS" in hits[0].text
    assert sum(d.chunks for d in service.kbs.documents("base")) == _vector_count(service, "base")


def test_removing_a_document_removes_every_trace(service, docs):
    service.kbs.create("base")
    service.builds.add("base", [docs])
    removed = service.builds.remove("base", "sql.txt")
    assert removed.chunks > 0
    assert [d.source for d in service.kbs.documents("base")] == ["policy.md"]
    kb = service.kbs.get("base")
    [row] = service._home.catalog.db.rows(
        "SELECT COUNT(*) AS n FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE d.kb_id = ? AND d.source = 'sql.txt'",
        (kb.id,),
    )
    assert row["n"] == 0
    assert _vector_count(service, "base") == service.kbs.documents("base")[0].chunks
    hits = service.search.query("prepared statements SQL injection", ["base"], top_k=10)
    assert all(h.document == "policy.md" for h in hits)
    with pytest.raises(NotFoundError, match="no document named"):
        service.builds.remove("base", "sql.txt")


def test_deleting_a_knowledge_base_removes_it_everywhere(service, docs):
    service.kbs.create("gone")
    service.kbs.create("kept")
    service.builds.add("gone", [docs])
    service.builds.add("kept", [docs / "sql.txt"])
    dim, gone_id = service.kbs.get("gone").dimension, service.kbs.get("gone").id
    service.kbs.delete("gone")
    assert [kb.name for kb in service.kbs.all()] == ["kept"]
    assert service._home.vectors.count(dim, kb=gone_id) == 0
    [left] = service._home.catalog.db.rows(
        "SELECT COUNT(*) AS n FROM chunks WHERE kb_id = ?", (gone_id,)
    )
    assert left["n"] == 0
    assert service.search.query("prepared statements", ["kept"], top_k=1)[0].document == "sql.txt"
    with pytest.raises(NotFoundError, match="no knowledge base named 'gone'"):
        service.search.query("x", ["gone"])


def test_search_scope_is_one_several_or_all(service, docs):
    service.kbs.create("zh")
    service.kbs.create("en")
    service.builds.add("zh", [docs / "policy.md"])
    service.builds.add("en", [docs / "sql.txt"])
    assert {h.kb for h in service.search.query("bcrypt 口令", ["en"], top_k=5)} == {"en"}
    both = service.search.query("bcrypt 口令 prepared statements", None, top_k=10)
    assert {h.kb for h in both} == {"zh", "en"}
    assert {h.kb for h in service.search.query("bcrypt", ["zh", "en"], top_k=10)} == {"zh", "en"}


def test_a_corpus_line_becomes_one_document_named_by_its_id(service, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {"id": f"p{i}", "title": f"Topic {i}", "text": f"Passage number {i} about {w}."}
        for i, w in enumerate(["owls", "rivers", "volcanoes"])
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    service.kbs.create("c")
    assert sorted(service.builds.add("c", [corpus]).added) == ["p0", "p1", "p2"]
    hit = service.search.query("volcanoes", ["c"], top_k=1)[0]
    assert (hit.document, hit.title) == ("p2", "Topic 2")


def test_duplicate_and_bad_names_are_refused(service):
    service.kbs.create("base")
    with pytest.raises(StoreError, match="already exists"):
        service.kbs.create("base")
    with pytest.raises(StoreError, match="needs a name"):
        service.kbs.create("  ")
    with pytest.raises(StoreError, match="valid build modes: index, graph"):
        service.kbs.create("x", mode="fast")
