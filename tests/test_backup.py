"""Backup: one knowledge base exported to an archive and imported elsewhere, for real (SQLite and
Milvus Lite in temp homes, the built-in embedder, the offline graph heuristics)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.command import zx
from tests.fakes import FakeOpenAI, HashEmbedder
from zhixing.core.backup import TABLES
from zhixing.core.config import Settings, save_settings
from zhixing.core.errors import ParseError, StoreError
from zhixing.core.service import KnowledgeService
from zhixing.core.store.analysis import ANALYSIS_VERSION
from zhixing.core.store.vectors import KINDS

SECRET = "sk-test-Zx9secretKEY-do-not-leak-0042"
QUERIES = ("跨站脚本 如何防止", "How is CSRF prevented?", "SQL注入 参数化查询", "CWE-79")

DOCS = {
    "web-security.md": (
        "# Web 安全规范\n\n"
        "## 跨站脚本\n\n"
        "跨站脚本（XSS）属于注入类漏洞。输出到 HTML 页面的数据必须进行上下文相关的编码。\n"
        "CWE-79 描述了跨站脚本漏洞。应对用户输入进行校验。\n\n"
        "## SQL 注入\n\n"
        "SQL注入属于注入类漏洞。应使用参数化查询防止 SQL注入。禁止拼接用户输入到 SQL 语句。\n"
        "参数化查询包括预编译语句和存储过程。\n"
    ),
    "csrf.txt": (
        "Cross-site request forgery (CSRF) is a web attack that abuses a logged-in session.\n"
        "Synchronizer tokens prevent CSRF. SameSite cookies prevent CSRF.\n\n"
        "Servers must validate the Origin header of every state-changing request.\n"
        "Applications shall reject requests without a valid CSRF token.\n"
    ),
}


def _settings(home: Path, **overrides: Any) -> Settings:
    knobs = {"embed_batch": 32, "parse_workers": 1, "chunk_units": 60, "chunk_overlap_units": 0}
    return Settings(home=home, **(knobs | overrides))


class FailingEmbedder(HashEmbedder):
    """Embeds the first batch, then loses its endpoint."""

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.seen:
            raise ConnectionError("the embedding endpoint went away")
        return super().embed(texts)


def snapshot(svc: KnowledgeService, name: str) -> dict[str, Any]:
    """Everything a knowledge base holds, by content (names, ordinals), never by row id."""
    kb = svc.kbs.get(name)

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r.values()) for r in svc._home.catalog.db.rows(sql, [kb.id])]

    chunk = "JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.document_id"
    return {
        "kb": (kb.mode, kb.tags, kb.description, kb.analysis),
        "documents": rows(
            "SELECT source, sha256, kind, title, pages, chunks, status, error FROM documents"
            " WHERE kb_id = ? ORDER BY source"
        ),
        "chunks": rows(
            "SELECT d.source, m.ordinal, m.text, m.heading_path, m.page_start, m.page_end,"
            " m.line_start, m.line_end FROM chunks m JOIN documents d ON d.id = m.document_id"
            " WHERE m.kb_id = ? ORDER BY 1, 2"
        ),
        "questions": rows(
            f"SELECT d.source, c.ordinal, m.text, m.line_start, m.line_end FROM questions m {chunk}"
            " WHERE m.kb_id = ? ORDER BY 1, 2, 3"
        ),
        "entities": rows(
            "SELECT key, type, name, description, aliases, attributes FROM entities"
            " WHERE kb_id = ? ORDER BY 1, 2"
        ),
        "aliases": rows(
            "SELECT m.key, m.type, e.name FROM entity_aliases m JOIN entities e"
            " ON e.id = m.entity_id WHERE m.kb_id = ? ORDER BY 1, 2"
        ),
        "relations": rows(
            "SELECT s.name, t.name, m.type, m.description, m.weight FROM relations m"
            " JOIN entities s ON s.id = m.source_id JOIN entities t ON t.id = m.target_id"
            " WHERE m.kb_id = ? ORDER BY 1, 2, 3"
        ),
        "entity_mentions": rows(
            f"SELECT e.name, d.source, c.ordinal, m.name, m.description FROM entity_mentions m"
            f" JOIN entities e ON e.id = m.entity_id {chunk} WHERE e.kb_id = ? ORDER BY 1, 2, 3, 4"
        ),
        "relation_mentions": rows(
            "SELECT s.name, t.name, r.type, d.source, c.ordinal, m.description"
            " FROM relation_mentions m JOIN relations r ON r.id = m.relation_id"
            " JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id"
            f" {chunk} WHERE r.kb_id = ? ORDER BY 1, 2, 3, 4, 5"
        ),
        "vectors": {k: svc._home.vectors.count(kb.dimension, kb=kb.id, kind=k) for k in KINDS},
    }


def searches(svc: KnowledgeService, name: str) -> list[list[tuple[str, str]]]:
    return [[(h.document, h.text) for h in svc.search.query(q, [name], top_k=5)] for q in QUERIES]


@pytest.fixture(scope="module")
def source(tmp_path_factory, embedder) -> dict[str, Any]:
    """A graph-mode knowledge base "安全" built offline, its snapshot and search results, and
    its archive, exported by a service configured with an API key (saved in its home)."""
    root = tmp_path_factory.mktemp("backup")
    home, docs = root / "home", root / "docs"
    docs.mkdir()
    for file, text in DOCS.items():
        (docs / file).write_text(text, encoding="utf-8")
    # Built through the fake OpenAI endpoint, so that it has generated questions too (an
    # offline build writes none); read back offline, as the restore will be.
    with (
        FakeOpenAI() as fake,
        KnowledgeService(
            _settings(home, openai_base_url=fake.url, openai_api_key="sk-test"),
            embedder=embedder,
            llm_options={"timeout_s": 2.0, "max_attempts": 3, "backoff_s": 0.01},
        ) as svc,
    ):
        svc.kbs.create("安全", mode="graph", tags=["web", "安全"], description="Web 安全")
        report = svc.builds.add("安全", sorted(docs.iterdir()))
        assert report.ok and report.questions
    with KnowledgeService(_settings(home), embedder=embedder) as svc:
        before, hits = snapshot(svc, "安全"), searches(svc, "安全")
    save_settings(home, {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    configured = Settings.from_env({"ZHIXING_HOME": str(home)})
    assert configured.openai_api_key == SECRET
    archive = root / "安全.zip"
    with KnowledgeService(configured, embedder=embedder) as svc:
        summary = svc.kbs.export_archive("安全", archive)
    return {"home": home, "archive": archive, "summary": summary, "before": before, "hits": hits}


def test_the_fixture_knowledge_base_has_every_kind_of_row(source):
    before, counts = source["before"], source["summary"].counts
    assert len(before["documents"]) == 2 and len(before["chunks"]) > 2
    assert before["questions"] and before["relations"] and before["entity_mentions"]
    assert any(json.loads(e[4]) for e in before["entities"]), "some entity has an alias"
    assert counts["chunks"] == len(before["chunks"])
    assert counts["vectors"] == sum(before["vectors"].values())


def test_an_archive_restores_the_same_knowledge_base_on_another_server(source, tmp_path, embedder):
    with KnowledgeService(_settings(tmp_path / "other"), embedder=embedder) as svc:
        summary = svc.kbs.import_archive(source["archive"])
        assert summary.name == "安全" and summary.reembedded is False
        assert summary.counts == source["summary"].counts
        assert snapshot(svc, "安全") == source["before"]
        assert searches(svc, "安全") == source["hits"]
        assert svc.graph.neighbourhood("安全", "CSRF").nodes


def test_an_archive_crosses_from_a_lite_home_to_a_milvus_server_and_back_unchanged(
    source, tmp_path, embedder, milvus_server
):
    settings = _settings(tmp_path / "team", milvus_uri=milvus_server)
    back = tmp_path / "back.zip"
    with KnowledgeService(settings, embedder=embedder) as svc:
        summary = svc.kbs.import_archive(source["archive"])
        assert summary.counts == source["summary"].counts
        assert snapshot(svc, "安全") == source["before"]
        assert searches(svc, "安全") == source["hits"]
        exported = svc.kbs.export_archive("安全", back)  # the vectors now come from the server
        assert exported.counts == source["summary"].counts
    with KnowledgeService(_settings(tmp_path / "laptop"), embedder=embedder) as svc:
        assert svc.kbs.import_archive(back).reembedded is False
        assert snapshot(svc, "安全") == source["before"]
        assert searches(svc, "安全") == source["hits"]


def test_an_archive_holds_no_api_key_and_no_settings(source):
    raw = source["archive"].read_bytes()
    assert SECRET.encode() not in raw
    with zipfile.ZipFile(source["archive"]) as zf:
        names = set(zf.namelist())
        assert names == {"manifest.json", "vectors/records.jsonl", "vectors/dense.npy"} | {
            f"tables/{t}.jsonl" for t in TABLES
        }
        for member in names:
            data = zf.read(member)
            assert SECRET.encode() not in data and b"127.0.0.1:9" not in data, member
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["format"] == "zhixing-kb" and manifest["version"] == 1
    assert manifest["embedding"] == {"name": "builtin", "dimension": 512}


def test_import_as_a_new_name_sits_beside_the_original_in_the_same_home(source, tmp_path, embedder):
    home = tmp_path / "home"
    shutil.copytree(source["home"], home)
    with KnowledgeService(_settings(home), embedder=embedder) as svc:
        with pytest.raises(StoreError, match="already exists.*--as"):
            svc.kbs.import_archive(source["archive"])
        svc.kbs.import_archive(source["archive"], as_name="安全副本")
        assert [kb.name for kb in svc.kbs.all()] == ["安全", "安全副本"]
        assert snapshot(svc, "安全副本") == snapshot(svc, "安全") == source["before"]
        assert searches(svc, "安全副本") == searches(svc, "安全")
        svc.kbs.delete("安全")  # the copy owns its own rows and vectors
        assert snapshot(svc, "安全副本") == source["before"]


def test_a_different_embedder_re_embeds_the_texts_and_search_still_works(source, tmp_path):
    hasher = HashEmbedder()
    with KnowledgeService(_settings(tmp_path / "other", embed_batch=8), embedder=hasher) as svc:
        summary = svc.kbs.import_archive(source["archive"])
        kb = svc.kbs.get("安全")
        assert summary.reembedded is True
        assert (kb.embedding, kb.dimension) == ("test-hash", 64)
        after = snapshot(svc, "安全")
        assert after == source["before"]  # every kind of vector is back, now 64-dimensional
        assert svc._home.vectors.count(64, kb=kb.id) == source["summary"].counts["vectors"]
        # The embedder saw the texts a build embeds, not the stemmed BM25 text.
        chunk = source["before"]["chunks"][0][2]
        assert any(chunk in text for text in hasher.seen)
        hits = svc.search.query("SQL注入 参数化查询", ["安全"], top_k=3)
        assert hits and hits[0].document == "web-security.md"


def _rewrite(archive: Path, target: Path, change: dict[str, bytes | None]) -> Path:
    """Copy an archive, replacing (bytes), dropping (None) or adding members."""
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            if name not in change:
                dst.writestr(name, src.read(name))
        for name, data in change.items():
            if data is not None:
                dst.writestr(name, data)
    return target


def _manifest(archive: Path, **fields: Any) -> bytes:
    with zipfile.ZipFile(archive) as zf:
        return json.dumps(json.loads(zf.read("manifest.json")) | fields).encode()


def test_an_archive_of_an_older_analysis_is_analysed_again_on_import(source, tmp_path, embedder):
    """An older release indexed raw Chinese for jieba; today's collections split on whitespace."""
    with zipfile.ZipFile(source["archive"]) as zf:
        records = [json.loads(line) for line in zf.read("vectors/records.jsonl").splitlines()]
    for record in records:
        if record["kind"] in ("chunk", "question"):
            record["text"] = "文本分析之前的原文"  # what no query of today's analysis matches
    old = _rewrite(
        source["archive"],
        tmp_path / "old.zip",
        {
            "manifest.json": _manifest(source["archive"], kb=_kb_meta(source, analysis=1)),
            "vectors/records.jsonl": "\n".join(json.dumps(r) for r in records).encode(),
        },
    )
    with KnowledgeService(_settings(tmp_path / "other"), embedder=embedder) as svc:
        svc.kbs.import_archive(old)
        assert svc.kbs.get("安全").analysis == ANALYSIS_VERSION
        hits = svc.search.query("参数化查询", ["安全"], strategies=["keyword"])
        assert hits and hits[0].document == "web-security.md"


def _kb_meta(source: dict[str, Any], **fields: Any) -> dict[str, Any]:
    with zipfile.ZipFile(source["archive"]) as zf:
        return json.loads(zf.read("manifest.json"))["kb"] | fields


def _leftovers(svc: KnowledgeService) -> dict[str, int]:
    db = svc._home.catalog.db
    tables = ["knowledge_bases", *TABLES]
    return {t: db.rows(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"] for t in tables}


def test_files_that_are_not_good_archives_are_refused_with_one_sentence(source, tmp_path, embedder):
    archive = source["archive"]
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip at all \x00\x01" * 50)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    plain = tmp_path / "plain.zip"
    with zipfile.ZipFile(plain, "w") as zf:
        zf.writestr("notes.txt", "hello")
    newer = _rewrite(
        archive, tmp_path / "newer.zip", {"manifest.json": _manifest(archive, version=99)}
    )
    short = _rewrite(archive, tmp_path / "short.zip", {"vectors/dense.npy": None})
    bomb = _rewrite(archive, tmp_path / "bomb.zip", {"padding.bin": bytes(64 << 20)})
    cases = {
        garbage: "not a Zhixing knowledge-base archive",
        truncated: "not a Zhixing knowledge-base archive",
        plain: "not a Zhixing knowledge-base archive",
        newer: "format version 99",
        short: "incomplete",
        bomb: "far more than its own size",
        tmp_path / "missing.zip": "cannot be read",
    }
    with KnowledgeService(_settings(tmp_path / "other"), embedder=embedder) as svc:
        for path, message in cases.items():
            with pytest.raises(ParseError, match=message) as caught:
                svc.kbs.import_archive(path)
            assert str(caught.value).count(". ") == 0, "one sentence"
        assert set(_leftovers(svc).values()) == {0}


def test_members_that_point_outside_the_archive_are_refused_unread(source, tmp_path, embedder):
    work = tmp_path / "work"
    work.mkdir()
    evil = _rewrite(source["archive"], work / "evil.zip", {"../escaped.txt": b"pwned"})
    absolute = _rewrite(source["archive"], work / "abs.zip", {"/tmp/escaped.txt": b"pwned"})
    with KnowledgeService(_settings(tmp_path / "other"), embedder=embedder) as svc:
        for path in (evil, absolute):
            with pytest.raises(ParseError, match="points outside the archive"):
                svc.kbs.import_archive(path)
        assert svc.kbs.all() == []
    assert not (tmp_path / "escaped.txt").exists() and not (work / "escaped.txt").exists()


@pytest.mark.parametrize("backend", ["lite", "server"])
def test_a_failed_import_leaves_no_rows_and_no_vectors_behind(source, tmp_path, backend, request):
    failing = FailingEmbedder()
    uri = request.getfixturevalue("milvus_server") if backend == "server" else ""
    other = _settings(tmp_path / "other", embed_batch=8, milvus_uri=uri)
    with KnowledgeService(other, embedder=failing) as svc:
        with pytest.raises(ConnectionError):
            svc.kbs.import_archive(source["archive"])
        assert failing.seen, "the first batch was embedded (and written) before the failure"
        assert set(_leftovers(svc).values()) == {0}
        kb_id = svc._home.catalog.db.rows(
            "SELECT seq FROM sqlite_sequence WHERE name = 'knowledge_bases'"
        )[0]["seq"]
        assert svc._home.vectors.count(64, kb=kb_id) == 0
        # An archive whose rows do not hold together fails inside the catalog transaction.
        with zipfile.ZipFile(source["archive"]) as zf:
            lines = zf.read("tables/relations.jsonl").decode().splitlines()
        broken = json.loads(lines[0]) | {"source_id": 10**9}
        bad = _rewrite(
            source["archive"],
            tmp_path / "bad.zip",
            {"tables/relations.jsonl": "\n".join([json.dumps(broken), *lines[1:]]).encode()},
        )
        with pytest.raises(ParseError, match="row 1 of relations"):
            svc.kbs.import_archive(bad)
        assert set(_leftovers(svc).values()) == {0}
        assert svc.kbs.all() == []


@pytest.mark.slow
def test_export_and_import_on_the_command_line(source, tmp_path):
    archive, other = tmp_path / "kb.zip", tmp_path / "other"
    exported = json.loads(zx(source["home"], "export", "安全", str(archive), "--json").stdout)
    assert exported["counts"] == source["summary"].counts
    imported = json.loads(zx(other, "import", str(archive), "--json").stdout)
    assert imported["name"] == "安全" and imported["counts"] == exported["counts"]
    again = zx(other, "import", str(archive), check=False)
    assert again.returncode == 1 and not again.stdout
    assert again.stderr.startswith("zhixing: ") and "--as NAME" in again.stderr
    hits = json.loads(zx(other, "search", "安全", QUERIES[1], "--top-k", "5", "--json").stdout)
    assert [(h["document"], h["text"]) for h in hits["hits"]] == source["hits"][1]
    # Who exported and imported what is in each server's audit log.
    audit = json.loads(zx(other, "audit", "--json").stdout)
    assert ("local", "kb.import", "安全") in [(e["user"], e["action"], e["target"]) for e in audit]
    audit = json.loads(zx(source["home"], "audit", "--json").stdout)
    assert ("kb.export", "安全") in [(e["action"], e["target"]) for e in audit]
