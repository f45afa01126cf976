"""The catalog (docs/architecture.md §3): knowledge bases, documents and chunks.

The catalog opens its home's database (a SQLite file, or PostgreSQL: dialect.py), and with it
the build jobs (`catalog.jobs`), whose table sits beside the knowledge bases it refers to. Every write that
must be all-or-nothing runs inside `transaction()`. The catalog is the source of truth: the
vector store only holds what the catalog says is indexed, and a document is marked `indexed`
only after its vectors are written.
"""

from __future__ import annotations

import json
import time
import unicodedata
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeGuard

from ..choices import BuildMode, DocumentState
from ..errors import NotFoundError, StoreError, ZhixingError
from ..models import Chunk, KnowledgeBase, KnownDocument, StoredDocument
from .analysis import ANALYSIS_VERSION
from .catalog_schema import SCHEMA, add_fill_trigger, migrate
from .dialect import SqlDatabase
from .jobs import JobStore
from .kb_rows import Ids, Tables, dump_table, load_table
from .sqlite import Database

__all__ = ["Catalog", "catalog_exists", "open_database"]

_DOC_COLUMNS = "id, kb_id, source, sha256, kind, title, pages, chunks, status, error"
# The knowledge base's own fields a dump carries (its name may change on load).
_KB_FIELDS = ("name", "description", "build_mode", "analysis", "created_at")


class Catalog:
    """The catalog of one Zhixing home. Safe to share between threads of one process."""

    def __init__(self, path: Path | str) -> None:
        """Open the catalog at `path`: a SQLite file, or a `postgresql://` URI."""
        self.db = open_database(path)
        self.path = self.db.path
        self.db.executescript(self.db.dialect.ddl(SCHEMA))
        migrate(self.db)
        self.jobs = JobStore(self.db)
        add_fill_trigger(self.db)

    def close(self) -> None:
        self.db.close()

    def deployment(self) -> str:
        """This home's deployment id: made once, kept, and part of every collection name, so
        two homes on one Milvus server never meet. A home whose knowledge bases predate it
        keeps "" (the collections it already filled)."""
        # No lock needed: whoever inserts first wins, and every caller reads the winner back.
        row = self.db.rows("SELECT value FROM home WHERE key = 'deployment'")
        if row:
            return str(row[0]["value"])
        legacy = bool(self.db.rows("SELECT 1 FROM knowledge_bases LIMIT 1"))
        value = "" if legacy else uuid.uuid4().hex[:12]
        self.db.execute(
            "INSERT INTO home (key, value) VALUES ('deployment', ?) ON CONFLICT DO NOTHING",
            (value,),
        )
        return str(self.db.rows("SELECT value FROM home WHERE key = 'deployment'")[0]["value"])

    def renew_deployment(self) -> str:
        """Give this home a deployment id of its own, made now, and return it: a restored home
        writes its vectors afresh, never into the collections of the home it was copied from."""
        value = uuid.uuid4().hex[:12]
        self.db.execute(
            "INSERT OR REPLACE INTO home (key, value) VALUES ('deployment', ?)", (value,)
        )
        return value

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run a block atomically: all of its writes land, or none do. It spans every store
        of the home (they share its file), so a block may write the graph's rows too."""
        with self.db.transaction():
            yield

    # --- knowledge bases -------------------------------------------------------------------

    def create_kb(
        self,
        name: str,
        *,
        mode: str = "index",
        tags: Iterable[str] = (),
        description: str = "",
        embedding: str = "builtin",
        dimension: int = 512,
        created_by: str = "",
    ) -> KnowledgeBase:
        """A new, empty knowledge base; `created_by` names the user who made it (an editor may
        delete their own as long as it never held a document)."""
        name = _check_kb_name(name)
        try:
            mode = BuildMode.parse(mode).value
        except ZhixingError as exc:
            raise StoreError(str(exc)) from None
        if self.find_kb(name) is not None:
            raise StoreError(f"A knowledge base named {name!r} already exists.")
        with self.transaction():
            self.db.execute(
                "INSERT INTO knowledge_bases (name, description, tags, build_mode, embedding,"
                " dimension, created_at, analysis, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    description,
                    json.dumps(list(tags), ensure_ascii=False),
                    mode,
                    embedding,
                    dimension,
                    time.time(),
                    ANALYSIS_VERSION,
                    created_by,
                ),
            )
        return self.get_kb(name)

    def find_kb(self, name: str) -> KnowledgeBase | None:
        rows = self.db.rows("SELECT * FROM knowledge_bases WHERE name = ?", (name,))
        return _kb(rows[0]) if rows else None

    def get_kb(self, name: str) -> KnowledgeBase:
        """The knowledge base `name`, or NotFoundError. The sentence names no other knowledge
        base: the catalog does not know who asks (the service lists what the caller may see)."""
        kb = self.find_kb(name)
        if kb is None:
            raise NotFoundError(f"There is no knowledge base named {name!r}.")
        return kb

    def kb_origin(self, kb_id: int) -> tuple[str, bool]:
        """(the user who created a knowledge base, "" when unknown; whether it ever held a
        document)."""
        rows = self.db.rows("SELECT created_by, filled FROM knowledge_bases WHERE id = ?", (kb_id,))
        if not rows:
            raise NotFoundError(f"There is no knowledge base with id {kb_id}.")
        return str(rows[0]["created_by"]), bool(rows[0]["filled"])

    def kb_by_id(self, kb_id: int) -> KnowledgeBase:
        rows = self.db.rows("SELECT * FROM knowledge_bases WHERE id = ?", (kb_id,))
        if not rows:
            raise NotFoundError(f"There is no knowledge base with id {kb_id}.")
        return _kb(rows[0])

    def list_kbs(self) -> list[KnowledgeBase]:
        return [_kb(r) for r in self.db.rows("SELECT * FROM knowledge_bases ORDER BY name")]

    def kb_counts(self, kb_id: int) -> tuple[int, int]:
        """Return (documents, chunks) of a knowledge base, counting only indexed documents."""
        row = self.db.rows(
            "SELECT COUNT(*) AS docs, COALESCE(SUM(chunks), 0) AS chunks FROM documents"
            " WHERE kb_id = ? AND status = 'indexed'",
            (kb_id,),
        )[0]
        return int(row["docs"]), int(row["chunks"])

    def delete_kb(self, kb_id: int) -> None:
        with self.transaction():
            self.db.execute("DELETE FROM chunks WHERE kb_id = ?", (kb_id,))
            self.db.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))

    # --- documents -------------------------------------------------------------------------

    def find_document(self, kb_id: int, source: str) -> StoredDocument | None:
        rows = self.db.rows(
            f"SELECT {_DOC_COLUMNS} FROM documents WHERE kb_id = ? AND source = ?", (kb_id, source)
        )
        return _document(rows[0]) if rows else None

    def list_documents(self, kb_id: int) -> list[StoredDocument]:
        rows = self.db.rows(
            f"SELECT {_DOC_COLUMNS} FROM documents WHERE kb_id = ? ORDER BY source", (kb_id,)
        )
        return [_document(r) for r in rows]

    def document_states(self, kb_id: int) -> dict[str, KnownDocument]:
        """Map each source of a knowledge base to its row, hash and state (a fast skip check)."""
        rows = self.db.rows(
            "SELECT id, source, sha256, status FROM documents WHERE kb_id = ?", (kb_id,)
        )
        return {
            r["source"]: KnownDocument(r["id"], r["sha256"], DocumentState(r["status"]))
            for r in rows
        }

    def add_document(
        self,
        kb_id: int,
        *,
        source: str,
        sha256: str,
        kind: str,
        title: str,
        pages: int,
        chunks: Sequence[Chunk],
    ) -> tuple[int, list[int]]:
        """Record a parsed document and its chunks as `chunked`; return its id and chunk ids.

        An earlier row for the same source (an interrupted or older build) must have been removed
        first, with its vectors: see `BuildPipeline`.
        """
        with self.transaction():
            [row] = self.db.rows(
                "INSERT INTO documents (kb_id, source, sha256, kind, title, pages, chunks, status,"
                " added_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'chunked', ?) RETURNING id",
                (kb_id, source, sha256, kind, title, pages, len(chunks), time.time()),
            )
            doc_id = int(row["id"])
            self.db.executemany(
                "INSERT INTO chunks (document_id, kb_id, ordinal, text, heading_path, page_start,"
                " page_end, line_start, line_end, ocr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        doc_id,
                        kb_id,
                        c.ordinal,
                        c.text,
                        json.dumps(list(c.heading_path), ensure_ascii=False),
                        c.page_start,
                        c.page_end,
                        c.line_start,
                        c.line_end,
                        int(c.ocr),
                    )
                    for c in chunks
                ],
            )
            ids = [
                r["id"]
                for r in self.db.rows(
                    "SELECT id FROM chunks WHERE document_id = ? ORDER BY ordinal", (doc_id,)
                )
            ]
        return doc_id, ids

    def record_failure(
        self, kb_id: int, *, source: str, sha256: str, kind: str, error: str
    ) -> None:
        """Keep a failed document visible (status `failed`, with its error) without chunks."""
        with self.transaction():
            self.db.execute("DELETE FROM documents WHERE kb_id = ? AND source = ?", (kb_id, source))
            self.db.execute(
                "INSERT INTO documents (kb_id, source, sha256, kind, status, error, added_at)"
                " VALUES (?, ?, ?, ?, 'failed', ?, ?)",
                (kb_id, source, sha256, kind, error, time.time()),
            )

    def mark_indexed(self, doc_ids: Iterable[int]) -> None:
        ids = list(doc_ids)
        if not ids:
            return
        with self.transaction():
            self.db.executemany(
                "UPDATE documents SET status = 'indexed', error = '' WHERE id = ?",
                [(i,) for i in ids],
            )

    def mark_removing(self, doc_ids: Iterable[int]) -> None:
        """Flag documents whose removal has begun, so an interrupted removal is never `indexed`."""
        with self.transaction():
            self.db.executemany(
                "UPDATE documents SET status = 'removing' WHERE id = ?", [(i,) for i in doc_ids]
            )

    def delete_document(self, doc_id: int) -> None:
        with self.transaction():
            self.db.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
            self.db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def documents_version(self, kb_id: int) -> tuple[int, int, int]:
        """(documents, newest id, indexed) of a knowledge base: it changes whenever the set of
        indexed documents may have, so a cache keyed by it never serves a stale one."""
        row = self.db.rows(
            "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS newest,"
            " COALESCE(SUM(CASE WHEN status = 'indexed' THEN 1 ELSE 0 END), 0) AS indexed"
            " FROM documents WHERE kb_id = ?",
            (kb_id,),
        )[0]
        return int(row["n"]), int(row["newest"]), int(row["indexed"])

    def lead_chunks(self, kb_id: int) -> list[tuple[str, int, int]]:
        """(title, id of its first chunk, document id) for every indexed document of a
        knowledge base."""
        rows = self.db.rows(
            "SELECT d.title, c.id, d.id AS document_id FROM documents d JOIN chunks c"
            " ON c.document_id = d.id WHERE d.kb_id = ? AND d.status = 'indexed'"
            " AND c.ordinal = 0",
            (kb_id,),
        )
        return [(r["title"], r["id"], r["document_id"]) for r in rows]

    # --- chunks ----------------------------------------------------------------------------

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Fetch chunks with their document's source and title, keyed by chunk id."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.db.rows(
            "SELECT c.id, c.document_id, c.kb_id, c.ordinal, c.text, c.heading_path, c.page_start,"
            " c.page_end, c.line_start, c.line_end, c.ocr, d.source, d.title, d.status, k.name AS kb"
            " FROM chunks c JOIN documents d ON d.id = c.document_id"
            " JOIN knowledge_bases k ON k.id = c.kb_id"
            f" WHERE c.id IN ({marks})",
            list(chunk_ids),
        )
        for row in rows:
            row["heading_path"] = tuple(json.loads(row["heading_path"]))
        return {r["id"]: r for r in rows}

    def chunk_sources(self, kb_id: int) -> dict[int, str]:
        """The source of each chunk's document in a knowledge base, keyed by chunk id."""
        rows = self.db.rows(
            "SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.kb_id = ?",
            (kb_id,),
        )
        return {int(r["id"]): r["source"] for r in rows}

    def chunk_ids(self, kb_id: int, documents: Sequence[int] | None = None) -> list[int]:
        """The ids of a knowledge base's chunks, or of those of some of its documents, in
        id order (what the graph is told when it forgets or counts chunks)."""
        if documents is None:
            rows = self.db.rows("SELECT id FROM chunks WHERE kb_id = ? ORDER BY id", (kb_id,))
        else:
            rows = self.db.rows(
                "SELECT id FROM chunks WHERE kb_id = ? AND document_id IN"
                f" ({self.db.dialect.json_ids}) ORDER BY id",
                (kb_id, json.dumps([int(d) for d in documents])),
            )
        return [int(r["id"]) for r in rows]

    # --- one knowledge base whole (core/store/kb_rows.py) ------------------------------------

    def dump_rows(self, kb: KnowledgeBase) -> tuple[dict[str, Any], Tables]:
        """The knowledge base's own fields, and its documents and chunks."""
        with self.db.transaction():  # one consistent snapshot
            row = self.db.rows("SELECT * FROM knowledge_bases WHERE id = ?", (kb.id,))[0]
            tables = {
                table: dump_table(self.db, table, "WHERE t.kb_id = ?", (kb.id,))
                for table in ("documents", "chunks")
            }
        return {k: row[k] for k in _KB_FIELDS} | {"tags": list(kb.tags)}, tables

    def load_rows(
        self,
        name: str,
        meta: Mapping[str, Any],
        tables: Mapping[str, Sequence[Mapping[str, Any]]],
        ids: Ids,
        *,
        embedding: tuple[str, int],
    ) -> KnowledgeBase:
        """Create the knowledge base `name` from a dump's fields and insert its documents
        (`chunked`) and chunks under new ids, noting them in `ids`; all or nothing."""
        with self.transaction():  # create_kb joins it: it checks the name rules
            kb = self.create_kb(
                name,
                mode=meta["build_mode"],
                tags=[str(t) for t in meta.get("tags", [])],
                description=str(meta.get("description", "")),
                embedding=embedding[0],
                dimension=embedding[1],
            )
            self.db.execute(
                "UPDATE knowledge_bases SET created_at = ? WHERE id = ?",
                (float(meta.get("created_at") or time.time()), kb.id),
            )
            for table in ("documents", "chunks"):
                load_table(self.db, table, tables[table], kb.id, ids)
        return kb


def open_database(target: Path | str) -> SqlDatabase:
    """The catalog's database at `target`: a `postgresql://` URI, else a SQLite file's path."""
    if _on_postgres(target):
        from .postgres import PostgresDatabase  # psycopg loads only for a Postgres catalog

        return PostgresDatabase(target)
    return Database(target)


def _on_postgres(target: Path | str) -> TypeGuard[str]:
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def catalog_exists(target: Path | str) -> bool:
    """Whether a catalog is at `target`, making nothing: a SQLite file there, or a Postgres
    database that holds the catalog's tables (StoreError, one sentence, when its server
    cannot be reached)."""
    if _on_postgres(target):
        from .postgres import catalog_tables

        return "knowledge_bases" in catalog_tables(target)
    return Path(target).is_file()


KB_NAME_MAX = 64
KB_NAME_RULE = (
    f"A knowledge base needs a name of 1 to {KB_NAME_MAX} characters (Chinese is fine) with no "
    "control characters, no '/' or '\\', and not starting with '@' (which picks knowledge bases "
    "in a search)"
)


def _check_kb_name(name: str) -> str:
    """Return `name` stripped, or raise StoreError quoting the rule it breaks.

    Quotes and SQL or Milvus syntax are allowed: names only ever reach the database as bound
    parameters and never reach a Milvus filter (those are built from integer ids).
    """
    clean = name.strip()
    bad = (
        not clean
        or len(clean) > KB_NAME_MAX
        or clean.startswith("@")
        or any(c in "/\\" or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in clean)
    )
    if bad:
        shown = repr(clean[:KB_NAME_MAX]) + ("…" if len(clean) > KB_NAME_MAX else "")
        raise StoreError(f"{KB_NAME_RULE}; {shown} is not one.")
    return clean


def _document(row: dict[str, Any]) -> StoredDocument:
    return StoredDocument(**{**row, "status": DocumentState(row["status"])})


def _kb(row: dict[str, Any]) -> KnowledgeBase:
    return KnowledgeBase(
        id=row["id"],
        name=row["name"],
        mode=BuildMode(row["build_mode"]),
        tags=tuple(json.loads(row["tags"])),
        description=row["description"],
        embedding=row["embedding"],
        dimension=row["dimension"],
        analysis=row["analysis"],
    )
