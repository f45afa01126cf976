"""Backup (docs/architecture.md §9 `export` / `import`, `backup` / `restore`): one knowledge base
as a portable archive, and back; and a whole home (snapshot.py, restore.py, bundle.py: its
format, derived.py: the vectors its catalog implies, catalog_copy.py: its catalog and
conversations moved between SQLite and PostgreSQL), backed up while it serves.

The stores dump and load the knowledge base's rows (core/store/kb_rows.py), the vector store
its vectors; this package writes and reads the archive around them. The service authorizes and
audits (`service.kbs.export_archive`, `import_archive`); nothing here knows who asks.

The archive is a zip file (deflate). It is read in memory, member by member, and never
extracted, so no member name can reach the file system; names that try to leave the archive
(`../x`, `/x`, `C:x`, backslashes) are refused all the same, as are duplicate members,
archives whose end record declares more than 64 members or a central directory over 64 KiB
(checked before `zipfile` reads it, core/archives.py), and archives that would unpack to more
than 20 times their own size or 1 GiB. Members:

- `manifest.json`: `{"format": "zhixing-kb", "version": 1, "kb": {"name", "description",
  "tags", "build_mode", "analysis", "created_at"}, "embedding": {"name", "dimension"},
  "counts": {MEMBER: rows}, "exported_at"}`; `counts` has one entry per table and `vectors`.
- `tables/TABLE.jsonl`: one JSON object per row, for each table of `TABLES` (documents, chunks,
  questions, entities, entity_aliases, relations, entity_mentions, relation_mentions,
  degraded_chunks). Rows keep the exporting catalog's ids, used only to remap foreign keys.
- `vectors/records.jsonl`: `{"kind", "ref_id", "doc", "text"}` per vector; `text` is what
  Milvus indexes for BM25 (for chunks and questions analysed under `kb.analysis`). Import
  analyses chunks and questions again under the current analysis, so an archive from an older
  release lands in a collection whose analyzer expects today's tokens.
- `vectors/dense.npy`: the dense vectors, float32, shape (records, dimension), in that order.

Only the knowledge base's own data goes in: no settings, API keys, users or memberships (an
imported knowledge base starts unrestricted), build jobs, LLM cache or agent runs. Import allocates new ids and remaps every reference. When the target's embedder
matches the archive's, the stored vectors are reused; otherwise the same texts the build embeds
are embedded again, and the new knowledge base records the target's embedding. Import is
all-or-nothing: on failure its catalog rows and vectors are removed, and its documents only
become `indexed` once all their vectors are written, as in a build.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..build import embedding_text
from ..choices import DocumentState
from ..embed import Embedder
from ..errors import ParseError
from ..models import BackupSummary, Chunk, KnowledgeBase
from ..store import VectorRecord, VectorStore
from ..store.analysis import ANALYSIS_VERSION, bm25_text
from ..store.contracts import CatalogProtocol, GraphReaderProtocol, GraphStoreProtocol
from ..store.kb_rows import Ids, dump_kb, load_kb
from ..store.vectors import KINDS, primary_key
from .archive import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    TABLES,
    Archive,
    read_archive,
    write_archive,
)
from .restore import restore_home
from .snapshot import HomeBackup, backup_home

__all__ = [
    "FORMAT",
    "HomeBackup",
    "FORMAT_VERSION",
    "MANIFEST",
    "TABLES",
    "Stores",
    "backup_home",
    "export_kb",
    "import_kb",
    "read_archive",
    "restore_home",
]

# Vector kind -> the table of its ref_id.
_KIND_TABLE = {"chunk": "chunks", "question": "questions", "entity": "entities"}
_KIND_TABLE["relation"] = "relations"


@dataclass(frozen=True)
class Stores:
    """Where a knowledge base lives, and the embedder that embeds it again when needed."""

    catalog: CatalogProtocol
    vectors: VectorStore
    graph: GraphStoreProtocol
    embedder: Embedder
    embed_batch: int = 256


# --- export --------------------------------------------------------------------------------


def export_kb(stores: Stores, kb: KnowledgeBase, path: Path | str) -> BackupSummary:
    """Write knowledge base `kb` to the archive `path`; return what it holds (counts)."""
    path = Path(path)
    meta, tables = dump_kb(stores.catalog, stores.graph, kb)
    records, dense = _fetch_vectors(stores.vectors, kb, tables)
    counts = {table: len(rows) for table, rows in tables.items()} | {"vectors": len(records)}
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "kb": meta,
        "embedding": {"name": kb.embedding, "dimension": kb.dimension},
        "counts": counts,
        "exported_at": time.time(),
    }
    write_archive(path, manifest, tables, records, dense)
    return BackupSummary(kb.name, str(path), kb.embedding, kb.dimension, counts)


def _fetch_vectors(
    vectors: VectorStore, kb: KnowledgeBase, tables: dict[str, list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The vectors of every chunk, question, entity and relation the catalog rows name."""
    pks = [primary_key(k, int(r["id"])) for k, t in _KIND_TABLE.items() for r in tables[t]]
    found = [r for r in vectors.fetch(kb.dimension, pks) if int(r["kb"]) == kb.id]
    found.sort(key=lambda r: (KINDS.index(r["kind"]), int(r["ref_id"])))
    records = [
        {"kind": r["kind"], "ref_id": int(r["ref_id"]), "doc": int(r["doc"]), "text": r["text"]}
        for r in found
    ]
    dense = np.asarray([r["dense"] for r in found], dtype=np.float32).reshape(-1, kb.dimension)
    return records, dense


# --- import --------------------------------------------------------------------------------


def import_kb(stores: Stores, archive: Archive, name: str, path: Path) -> BackupSummary:
    """Restore a read archive as the new knowledge base `name` (whose name the caller checked
    is free), all or nothing; return what it holds."""
    meta, embedding = archive.manifest["kb"], archive.manifest["embedding"]
    target = (stores.embedder.name, int(stores.embedder.dimension))
    reuse = (embedding["name"], embedding["dimension"]) == target
    try:
        kb, ids = load_kb(
            stores.catalog, stores.graph, name, meta, archive.tables, embedding=target
        )
    except ParseError as exc:
        raise ParseError(f"The archive is inconsistent: {exc}.") from exc
    try:
        written = _write_vectors(stores, archive, kb.id, ids, reuse)
        docs = archive.tables["documents"]
        stores.catalog.mark_indexed(
            ids["documents"][int(d["id"])] for d in docs if d["status"] == DocumentState.INDEXED
        )
    except BaseException:
        with contextlib.suppress(Exception):  # the catalog, the source of truth, goes below
            stores.vectors.delete(target[1], kb=kb.id)
            stores.vectors.flush(target[1])
        stores.catalog.delete_kb(kb.id)
        raise
    counts = {t: len(rows) for t, rows in archive.tables.items()} | {"vectors": written}
    return BackupSummary(
        name, str(path), target[0], target[1], counts, source=meta["name"], reembedded=not reuse
    )


def _write_vectors(stores: Stores, archive: Archive, kb_id: int, ids: Ids, reuse: bool) -> int:
    """Upsert every archived vector under the new ids, re-embedding unless `reuse`."""
    records = []
    for r in archive.records:
        try:
            ref = ids[_KIND_TABLE[r["kind"]]][int(r["ref_id"])]
            doc = ids["documents"][int(r["doc"])] if int(r["doc"]) else 0
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"The archive has a vector for a missing row ({exc!r}).") from exc
        records.append((r["kind"], ref, doc, str(r["text"]), int(r["ref_id"])))
    raw = _embedded_texts(stores.graph, archive, ids)
    records = [
        (kind, ref, doc, _analysed(kind, raw.get((kind, old)), text), old)
        for kind, ref, doc, text, old in records
    ]
    dimension = int(stores.embedder.dimension)
    batch = max(1, stores.embed_batch)
    for start in range(0, len(records), batch):
        part = records[start : start + batch]
        if reuse:
            vectors: Any = archive.dense[start : start + batch]
        else:
            vectors = stores.embedder.embed(
                [raw.get((k, old), text) for k, _, _, text, old in part]
            )
        stores.vectors.upsert(
            dimension,
            [
                VectorRecord(kb=kb_id, doc=doc, kind=kind, ref_id=ref, text=text, vector=vector)
                for (kind, ref, doc, text, _), vector in zip(part, vectors, strict=True)
            ],
        )
    if records:
        stores.vectors.flush(dimension)
    return len(records)


def _analysed(kind: str, raw: str | None, archived: str) -> str:
    """The BM25 text of a chunk or question under today's analysis (entities go in as named)."""
    if kind in ("chunk", "question") and raw is not None:
        return bm25_text(raw, ANALYSIS_VERSION)
    return archived


def _embedded_texts(
    graph: GraphReaderProtocol, archive: Archive, ids: Ids
) -> dict[tuple[str, int], str]:
    """(kind, archived id) -> the text a build embeds for it (not the BM25-analysed one)."""
    titles = {int(d["id"]): d["title"] for d in archive.tables["documents"]}
    out = {
        ("chunk", int(c["id"])): embedding_text(
            titles.get(int(c["document_id"]), ""),
            Chunk(
                ordinal=c["ordinal"],
                text=c["text"],
                heading_path=tuple(json.loads(c["heading_path"])),
            ),
        )
        for c in archive.tables["chunks"]
    }
    out |= {("question", int(q["id"])): q["text"] for q in archive.tables["questions"]}
    new_to_old = {new: old for old, new in ids["entities"].items()}
    texts = graph.entity_text(list(new_to_old))
    out |= {("entity", new_to_old[new]): text for new, text in texts.items()}
    return out
