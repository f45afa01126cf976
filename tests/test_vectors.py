"""The Milvus store on a real Milvus Lite file in a temp dir, and on a real Milvus server over
gRPC (`milvus-lite server`): the same assertions on both."""

from __future__ import annotations

import subprocess
import sys
import uuid

import numpy as np
import pytest

from zhixing.core.errors import StoreError, StoreLockedError
from zhixing.core.store.analysis import bm25_text
from zhixing.core.store.vectors import VectorRecord, VectorStore, _filter, primary_key


def _unit(i: int, dim: int = 8) -> list[float]:
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    v[(i + 1) % dim] = 0.1
    return v.tolist()


@pytest.fixture(params=["lite", "server"])
def store(request, tmp_path):
    if request.param == "lite":
        s = VectorStore(str(tmp_path / "milvus.db"))
    else:  # a deployment of its own on the shared server: no test sees another's rows
        uri = request.getfixturevalue("milvus_server")
        s = VectorStore(uri, deployment=uuid.uuid4().hex[:12])
    yield s
    s.close()


def test_primary_keys_are_deterministic_and_distinct_per_kind():
    assert primary_key("chunk", 7) == primary_key("chunk", 7)
    assert len({primary_key(k, 7) for k in ("chunk", "question", "entity", "relation")}) == 4


def test_filters_are_built_from_integers_and_fixed_kinds_only():
    assert _filter([3, 7], ["chunk"]) == 'kb in [3, 7] and kind in ["chunk"]'
    with pytest.raises(StoreError, match="Unknown vector kind"):
        _filter([1], ['chunk"] or kb > 0 or kind in ["'])


def test_upsert_twice_does_not_duplicate_and_dense_search_ranks_by_cosine(store):
    records = [
        VectorRecord(kb=1, doc=10, kind="chunk", ref_id=i, text=f"chunk {i}", vector=_unit(i))
        for i in range(6)
    ]
    store.upsert(8, records)
    store.upsert(8, records)  # a retried batch
    assert store.count(8, kb=1) == 6
    hits = store.search_dense(8, [_unit(2)], kbs=[1], limit=3)[0]
    assert hits[0].ref_id == 2 and hits[0].kind == "chunk"
    assert store.search_dense(8, [_unit(2)], kbs=[2], limit=3) == [[]]


def test_bm25_finds_chinese_and_english_terms_in_analysed_text(store):
    # The store indexes text as core/store/analysis.py writes it, and is queried the same way.
    texts = [
        "SQL注入是一种常见的攻击方式",
        "跨站脚本攻击 XSS",
        "Passwords must be hashed with bcrypt",
    ]
    store.upsert(
        8,
        [
            VectorRecord(kb=1, doc=1, kind="chunk", ref_id=i, text=bm25_text(t), vector=_unit(i))
            for i, t in enumerate(texts)
        ],
    )
    assert store.search_bm25(8, [bm25_text("SQL注入")], kbs=[1], limit=2)[0][0].ref_id == 0
    assert store.search_bm25(8, [bm25_text("注入攻击")], kbs=[1], limit=2)[0][0].ref_id == 0
    assert store.search_bm25(8, [bm25_text("bcrypt hashing")], kbs=[1], limit=2)[0][0].ref_id == 2


def test_delete_by_document_and_by_knowledge_base(store):
    store.upsert(
        8,
        [
            VectorRecord(
                kb=kb,
                doc=doc,
                kind="chunk",
                ref_id=kb * 100 + doc * 10 + i,
                text="x",
                vector=_unit(i),
            )
            for kb in (1, 2)
            for doc in (1, 2)
            for i in range(3)
        ],
    )
    store.delete_documents(8, kb=1, docs=[1])
    assert store.count(8, kb=1) == 3 and store.count(8, kb=2) == 6
    store.delete(8, kb=2)
    assert store.count(8, kb=2) == 0 and store.count(8, kb=1) == 3


def test_a_reopened_collection_is_searchable(tmp_path):
    uri = str(tmp_path / "milvus.db")
    first = VectorStore(uri)
    first.upsert(
        8, [VectorRecord(kb=1, doc=1, kind="chunk", ref_id=5, text="hello", vector=_unit(5))]
    )
    first.close()
    second = VectorStore(uri)
    try:
        assert second.search_dense(8, [_unit(5)], kbs=[1], limit=1)[0][0].ref_id == 5
    finally:
        second.close()


@pytest.mark.process
def test_a_file_held_by_another_process_is_a_clear_error(tmp_path):
    uri = str(tmp_path / "milvus.db")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pymilvus import MilvusClient; MilvusClient(sys.argv[1]);"
            " print('ready', flush=True); time.sleep(60)",
            uri,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="open in another process"):
            VectorStore(uri)
    finally:
        holder.kill()
        holder.wait()


def test_waiting_for_the_indexes_returns_once_every_flushed_row_is_indexed(store):
    records = [
        VectorRecord(kb=1, doc=1, kind="chunk", ref_id=i, text=f"chunk {i}", vector=_unit(i))
        for i in range(20)
    ]
    store.upsert(8, records)
    store.flush(8)
    assert store.wait_until_indexed(8, timeout_s=60)
    name = store.collection_name(8)
    info = store.client.describe_index(name, "dense")
    assert info["indexed_rows"] == info["total_rows"] == 20
