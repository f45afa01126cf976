"""Backup (docs/architecture.md §9 `export` / `import`): one knowledge base as a portable archive, and back.

The archive is a zip file (deflate). It is read in memory, member by member, and never
extracted, so no member name can reach the file system; names that try to leave the archive
(`../x`, `/x`, `C:x`, backslashes) are refused all the same, as are duplicate members and
archives that would unpack to far more than their own size. Members:

- `manifest.json`: `{"format": "zhixing-kb", "version": 1, "kb": {"name", "description",
  "tags", "build_mode", "analysis", "created_at"}, "embedding": {"name", "dimension"},
  "counts": {MEMBER: rows}, "exported_at"}`; `counts` has one entry per table and `vectors`.
- `tables/TABLE.jsonl`: one JSON object per row, for each table of `TABLES` (documents, chunks,
  questions, entities, entity_aliases, relations, entity_mentions, relation_mentions,
  degraded_chunks). Rows keep the exporting catalog's ids, used only to remap foreign keys.
- `vectors/records.jsonl`: `{"kind", "ref_id", "doc", "text"}` per vector; `text` is what
  Milvus indexes for BM25 (for chunks and questions already analysed under `kb.analysis`).
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
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.backup.archive import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    TABLES,
    Archive,
    read_archive,
    write_archive,
)
from core.build import embedding_text
from core.errors import ParseError, StoreError
from core.models import Chunk, KnowledgeBase
from core.store import VectorRecord
from core.store.vectors import KINDS, primary_key

if TYPE_CHECKING:
    from core.service import KnowledgeService

__all__ = ["FORMAT", "FORMAT_VERSION", "TABLES", "export_kb", "import_kb"]

_HAS_KB = {"documents", "chunks", "questions", "entities", "entity_aliases", "relations"}
# How the rows of the other tables are found: through the row they belong to (`t` = the table).
_JOINS = {
    "entity_mentions": "JOIN entities e ON e.id = t.entity_id WHERE e.kb_id = ?",
    "relation_mentions": "JOIN relations r ON r.id = t.relation_id WHERE r.kb_id = ?",
    "degraded_chunks": "JOIN chunks c ON c.id = t.chunk_id WHERE c.kb_id = ?",
}
# Foreign-key column -> the table whose ids it holds; vector kind -> the table of its ref_id.
_REFS = {"document_id": "documents", "chunk_id": "chunks", "entity_id": "entities"}
_REFS |= {"source_id": "entities", "target_id": "entities", "relation_id": "relations"}
_KIND_TABLE = {"chunk": "chunks", "question": "questions", "entity": "entities"}
_KIND_TABLE["relation"] = "relations"

# --- export --------------------------------------------------------------------------------


def export_kb(service: KnowledgeService, name: str, path: Path | str) -> dict[str, Any]:
    """Write knowledge base `name` to the archive `path`; return what it holds (counts).

    Exporting is an editor's right (docs/architecture.md §10): an archive carries every row out of the
    server's access control. The role is checked before the name, so a viewer learns nothing of
    restricted knowledge bases; `service.kb` then keeps those invisible to non-members.
    """
    path = Path(path)
    service.actor.require("build", "export knowledge bases")
    kb = service.kb(name)
    with service._catalog.transaction():  # one consistent snapshot of the catalog rows
        tables = {
            table: list(
                service._catalog.db.query(
                    f"SELECT {', '.join(f't.{c}' for c in cols)} FROM {table} t"
                    f" {_JOINS.get(table, 'WHERE t.kb_id = ?')} ORDER BY t.rowid",
                    [kb.id],
                )
            )
            for table, cols in TABLES.items()
        }
    records, dense = _fetch_vectors(service, kb, tables)
    counts = {table: len(rows) for table, rows in tables.items()} | {"vectors": len(records)}
    row = next(
        iter(service._catalog.db.query("SELECT * FROM knowledge_bases WHERE id = ?", [kb.id]))
    )
    meta = {k: row[k] for k in ("name", "description", "build_mode", "analysis", "created_at")}
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "kb": meta | {"tags": list(kb.tags)},
        "embedding": {"name": kb.embedding, "dimension": kb.dimension},
        "counts": counts,
        "exported_at": time.time(),
    }
    write_archive(path, manifest, tables, records, dense)
    return _summary(kb.name, path, kb.embedding, kb.dimension, counts)


def _fetch_vectors(
    service: KnowledgeService, kb: KnowledgeBase, tables: dict[str, list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The vectors of every chunk, question, entity and relation the catalog rows name."""
    pks = [primary_key(k, int(r["id"])) for k, t in _KIND_TABLE.items() for r in tables[t]]
    found = service._vectors.fetch(kb.dimension, pks)
    found = [r for r in found if int(r["kb"]) == kb.id]
    found.sort(key=lambda r: (KINDS.index(r["kind"]), int(r["ref_id"])))
    records = [
        {"kind": r["kind"], "ref_id": int(r["ref_id"]), "doc": int(r["doc"]), "text": r["text"]}
        for r in found
    ]
    dense = np.asarray([r["dense"] for r in found], dtype=np.float32).reshape(-1, kb.dimension)
    return records, dense


# --- import --------------------------------------------------------------------------------


def import_kb(
    service: KnowledgeService, path: Path | str, as_name: str | None = None
) -> dict[str, Any]:
    """Restore the archive at `path` as a new knowledge base (named `as_name` if given)."""
    path = Path(path)
    service.authorize("build")
    archive = read_archive(path)
    meta, embedding = archive.manifest["kb"], archive.manifest["embedding"]
    name = (as_name if as_name is not None else meta["name"]).strip()
    try:
        # A name taken by a knowledge base the user may not see is refused without saying so.
        service.check_name_free(name)
    except StoreError as exc:
        raise StoreError(f"{exc} Import under another name with --as NAME.") from exc
    target = (service.embedder.name, int(service.embedder.dimension))
    reuse = (embedding["name"], embedding["dimension"]) == target
    kb_id, ids = _insert_catalog(service, archive, name, target)
    try:
        written = _write_vectors(service, archive, kb_id, ids, reuse)
        docs = archive.tables["documents"]
        service._catalog.mark_indexed(
            ids["documents"][int(d["id"])] for d in docs if d["status"] == "indexed"
        )
    except BaseException:
        with contextlib.suppress(Exception):  # the catalog, the source of truth, goes below
            service._vectors.delete(target[1], kb=kb_id)
            service._vectors.flush(target[1])
        service._catalog.delete_kb(kb_id)
        raise
    counts = {t: len(rows) for t, rows in archive.tables.items()} | {"vectors": written}
    summary = _summary(name, path, target[0], target[1], counts)
    return summary | {"source": meta["name"], "reembedded": not reuse}


def _insert_catalog(
    service: KnowledgeService, archive: Archive, name: str, embedding: tuple[str, int]
) -> tuple[int, dict[str, dict[int, int]]]:
    """Insert every row under new ids in one transaction; return the KB id and old -> new ids."""
    meta = archive.manifest["kb"]
    ids: dict[str, dict[int, int]] = {t: {} for t in TABLES}
    try:
        with service._catalog.transaction():  # create_kb joins it: it checks the name rules
            kb = service._catalog.create_kb(
                name,
                mode=meta["build_mode"],
                tags=[str(t) for t in meta.get("tags", [])],
                description=str(meta.get("description", "")),
                embedding=embedding[0],
                dimension=embedding[1],
            )
            service._catalog.db.execute(
                "UPDATE knowledge_bases SET analysis = ?, created_at = ? WHERE id = ?",
                (meta["analysis"], float(meta.get("created_at") or time.time()), kb.id),
            )
            for table in TABLES:
                _insert_rows(service, table, archive.tables[table], kb.id, ids)
    except sqlite3.Error as exc:
        raise StoreError(f"The catalog refused the import: {exc}.") from exc
    except (TypeError, ValueError) as exc:
        raise ParseError(f"The archive's {MANIFEST} garbles the knowledge base.") from exc
    return kb.id, ids


def _insert_rows(
    service: KnowledgeService,
    table: str,
    rows: Sequence[dict[str, Any]],
    kb_id: int,
    ids: dict[str, dict[int, int]],
) -> None:
    """Insert one table's archived rows with remapped keys, noting each new id in `ids`."""
    cols = TABLES[table]
    own = [c for c in cols if c != "id"]
    marks = ", ".join("?" * (len(own) + (table in _HAS_KB)))
    kb_col = ", kb_id" if table in _HAS_KB else ""
    sql = f"INSERT INTO {table} ({', '.join(own)}{kb_col}) VALUES ({marks})"
    for number, row in enumerate(rows, 1):
        try:
            values = [_remap(ids, c, row[c]) for c in own] + ([kb_id] if kb_col else [])
            if table == "documents" and row["status"] == "indexed":
                values[own.index("status")] = "chunked"  # `indexed` once its vectors are in
            new_id = service._catalog.db.execute(sql, values).lastrowid
            if "id" in cols:
                ids[table][int(row["id"])] = int(new_id or 0)
        except (KeyError, TypeError, ValueError, sqlite3.IntegrityError) as exc:
            raise ParseError(
                f"The archive is inconsistent: row {number} of {table} cannot be restored ({exc})."
            ) from exc


def _remap(ids: dict[str, dict[int, int]], column: str, value: Any) -> Any:
    """The new id for a foreign key (KeyError when it points at no archived row)."""
    table = _REFS.get(column)
    return value if table is None else ids[table][int(value)]


def _write_vectors(
    service: KnowledgeService,
    archive: Archive,
    kb_id: int,
    ids: dict[str, dict[int, int]],
    reuse: bool,
) -> int:
    """Upsert every archived vector under the new ids, re-embedding unless `reuse`."""
    records = []
    for r in archive.records:
        try:
            ref = ids[_KIND_TABLE[r["kind"]]][int(r["ref_id"])]
            doc = ids["documents"][int(r["doc"])] if int(r["doc"]) else 0
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"The archive has a vector for a missing row ({exc!r}).") from exc
        records.append((r["kind"], ref, doc, str(r["text"]), int(r["ref_id"])))
    raw = {} if reuse else _embedded_texts(service, archive, ids)
    dimension = int(service.embedder.dimension)
    batch = max(1, service.settings.embed_batch)
    for start in range(0, len(records), batch):
        part = records[start : start + batch]
        if reuse:
            vectors: Any = archive.dense[start : start + batch]
        else:
            vectors = service.embedder.embed(
                [raw.get((k, old), text) for k, _, _, text, old in part]
            )
        service._vectors.upsert(
            dimension,
            [
                VectorRecord(kb=kb_id, doc=doc, kind=kind, ref_id=ref, text=text, vector=vector)
                for (kind, ref, doc, text, _), vector in zip(part, vectors, strict=True)
            ],
        )
    if records:
        service._vectors.flush(dimension)
    return len(records)


def _embedded_texts(
    service: KnowledgeService, archive: Archive, ids: dict[str, dict[int, int]]
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
    texts = service._graph.entity_text(list(new_to_old))
    out |= {("entity", new_to_old[new]): text for new, text in texts.items()}
    return out


def _summary(
    name: str, path: Path, embedding: str, dimension: int, counts: dict[str, int]
) -> dict[str, Any]:
    return {"name": name, "file": str(path), "embedding": embedding, "dimension": dimension,
            "counts": counts}  # fmt: skip
