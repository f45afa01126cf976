"""Kill a build mid-way, run the same command again: it finishes with no duplicate, no loss,
on a Milvus Lite file and on a Milvus server (`milvus-lite server`, over gRPC) alike."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.command import zx
from tests.faults_support import indexed_documents, kill_midway
from zhixing.core.store import VectorStore

N = 160
BATCH = 64  # chunks the command embeds and saves at a time: the kill lands after the first
WORDS = ["firewall", "router", "cipher", "token", "session", "kernel", "packet", "audit"]


def _corpus(path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(N):
            text = " ".join(f"{WORDS[(i + j) % len(WORDS)]}{(i * 7 + j) % 97}" for j in range(60))
            out.write(json.dumps({"id": f"doc-{i}", "title": f"Record {i}", "text": text}) + "\n")


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["lite", "server"])
def test_a_killed_build_resumes_without_duplicates_or_lost_chunks(tmp_path, backend, request):
    home = tmp_path / "home"
    uri = request.getfixturevalue("milvus_server") if backend == "server" else ""
    store = {"ZHIXING_MILVUS_URI": uri, "ZHIXING_EMBED_BATCH": str(BATCH)}
    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus)
    zx(home, "kb", "create", "big", env=store)
    env = {**os.environ, "ZHIXING_HOME": str(home), **store}
    kill_midway(
        ["add", "big", str(corpus)],
        env,
        until=lambda: indexed_documents(home / "catalog.db") >= BATCH * 0.6,
        poll_s=0.05,
    )
    partial = indexed_documents(home / "catalog.db")
    assert 0 < partial < N, "the kill must land mid-build for this test to mean anything"

    again = zx(home, "add", "big", str(corpus), "--json", env=store)
    summary = json.loads(again.stdout)
    assert summary["skipped"] >= partial and summary["added"] + summary["skipped"] == N

    docs = json.loads(zx(home, "docs", "big", "--json", env=store).stdout)
    assert len(docs) == N and {d["status"] for d in docs} == {"indexed"}
    chunks = sum(d["chunks"] for d in docs)
    with sqlite3.connect(home / "catalog.db") as conn:
        (rows,) = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
        (kb_id,) = conn.execute("SELECT id FROM knowledge_bases WHERE name = 'big'").fetchone()
        (deployment,) = conn.execute("SELECT value FROM home WHERE key = 'deployment'").fetchone()
    vectors = VectorStore(uri or str(home / "milvus.db"), deployment=deployment)
    try:
        assert vectors.count(512, kb=kb_id) == rows == chunks
    finally:
        vectors.close()
    found = zx(home, "search", "big", "Record 117", "--json", env=store)
    hit = json.loads(found.stdout)["hits"]
    assert any(h["document"] == "doc-117" for h in hit)
