"""Kill a build mid-way, run the same command again: it finishes with no duplicate, no loss,
on a Milvus Lite file, on a Milvus server (`milvus-lite server`, over gRPC), and with the
catalog on PostgreSQL beside that server, alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.command import zx
from tests.faults_support import indexed_documents, kill_midway
from zhixing.core.store import Catalog, VectorStore

N = 160
BATCH = 64  # chunks the command embeds and saves at a time: the kill lands after the first
WORDS = ["firewall", "router", "cipher", "token", "session", "kernel", "packet", "audit"]


def _corpus(path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(N):
            text = " ".join(f"{WORDS[(i + j) % len(WORDS)]}{(i * 7 + j) % 97}" for j in range(60))
            out.write(json.dumps({"id": f"doc-{i}", "title": f"Record {i}", "text": text}) + "\n")


def _indexed(home: Path, catalog_uri: str) -> int:
    """Documents indexed so far, as another process's build wrote them to the catalog."""
    if not catalog_uri:
        return indexed_documents(home / "catalog.db")
    import psycopg

    try:
        with psycopg.connect(catalog_uri, connect_timeout=5) as conn:
            row = conn.execute("SELECT COUNT(*) FROM documents WHERE status = 'indexed'").fetchone()
    except psycopg.errors.UndefinedTable:  # before the command made the schema
        return 0
    return int(row[0]) if row else 0


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["lite", "server", "postgres"])
def test_a_killed_build_resumes_without_duplicates_or_lost_chunks(tmp_path, backend, request):
    home = tmp_path / "home"
    uri = request.getfixturevalue("milvus_server") if backend != "lite" else ""
    catalog = (
        request.getfixturevalue("postgres_cluster").new_database() if backend == "postgres" else ""
    )
    store = {
        "ZHIXING_MILVUS_URI": uri,
        "ZHIXING_EMBED_BATCH": str(BATCH),
        "ZHIXING_CATALOG_URI": catalog,
    }
    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus)
    zx(home, "kb", "create", "big", env=store)
    env = {**os.environ, "ZHIXING_HOME": str(home), **store}
    kill_midway(
        ["add", "big", str(corpus)],
        env,
        until=lambda: _indexed(home, catalog) >= BATCH * 0.6,
        poll_s=0.05,
    )
    partial = _indexed(home, catalog)
    assert 0 < partial < N, "the kill must land mid-build for this test to mean anything"

    again = zx(home, "add", "big", str(corpus), "--json", env=store)
    summary = json.loads(again.stdout)
    assert summary["skipped"] >= partial and summary["added"] + summary["skipped"] == N

    docs = json.loads(zx(home, "docs", "big", "--json", env=store).stdout)
    assert len(docs) == N and {d["status"] for d in docs} == {"indexed"}
    chunks = sum(d["chunks"] for d in docs)
    catalog_db = Catalog(catalog or home / "catalog.db")
    try:
        [rows] = catalog_db.db.rows("SELECT COUNT(*) AS n FROM chunks")
        kb_id = catalog_db.get_kb("big").id
        deployment = catalog_db.deployment()
    finally:
        catalog_db.close()
    vectors = VectorStore(uri or str(home / "milvus.db"), deployment=deployment)
    try:
        assert vectors.count(512, kb=kb_id) == rows["n"] == chunks
    finally:
        vectors.close()
    found = zx(home, "search", "big", "Record 117", "--json", env=store)
    hit = json.loads(found.stdout)["hits"]
    assert any(h["document"] == "doc-117" for h in hit)
