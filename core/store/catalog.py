"""The SQLite catalog (docs/architecture.md §3): knowledge bases, documents, chunks and build jobs.

One file in WAL mode, opened through sqlite-utils. Every write that must be all-or-nothing runs
inside `transaction()`. The catalog is the source of truth: the vector store only holds what the
catalog says is indexed, and a document is marked `indexed` only after its vectors are written.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import threading
import time
import unicodedata
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import sqlite_utils

from ..choices import BuildMode, DocumentState
from ..errors import NotFoundError, StoreError, ZhixingError
from ..home import private_file
from ..models import Chunk, KnowledgeBase, KnownDocument, StoredDocument
from .analysis import ANALYSIS_VERSION
from .job_table import JobsMixin
from .kb_rows import KbRowsMixin

__all__ = ["Catalog"]

# AUTOINCREMENT: ids are never reused. Vector primary keys derive from them, so a vector left
# behind by an interrupted delete can never be mistaken for a later row.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS home (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS knowledge_bases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    build_mode TEXT NOT NULL,
    embedding TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    created_at REAL NOT NULL,
    analysis INTEGER NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL DEFAULT '',
    filled INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    pages INTEGER NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    added_at REAL NOT NULL,
    UNIQUE (kb_id, source)
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    kb_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    heading_path TEXT NOT NULL DEFAULT '[]',
    page_start INTEGER NOT NULL,
    page_end INTEGER NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    UNIQUE (document_id, ordinal)
);
CREATE INDEX IF NOT EXISTS chunks_kb ON chunks(kb_id);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    total INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    finished_at REAL,
    paths TEXT NOT NULL DEFAULT '[]',
    staging TEXT NOT NULL DEFAULT '',
    pid INTEGER NOT NULL DEFAULT 0,
    pid_started TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT ''
);
"""

# A knowledge base that ever held a document stays `filled`, even once every document is removed:
# deleting it is then an admin's (docs/architecture.md §10). A failed document held no content
# and leaves it unfilled. Made after `_migrate`, which adds the column to an older catalog.
_FILL_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS documents_fill AFTER INSERT ON documents
WHEN NEW.status != 'failed'
BEGIN
    UPDATE knowledge_bases SET filled = 1 WHERE id = NEW.kb_id AND filled = 0;
END
"""

# Columns added to `jobs` since the first catalogs: (name, declaration) for ALTER TABLE.
_JOB_COLUMNS = (
    ("paths", "TEXT NOT NULL DEFAULT '[]'"),
    ("staging", "TEXT NOT NULL DEFAULT ''"),
    ("pid", "INTEGER NOT NULL DEFAULT 0"),
    ("pid_started", "TEXT NOT NULL DEFAULT ''"),
    ("message", "TEXT NOT NULL DEFAULT ''"),
)

_DOC_COLUMNS = "id, kb_id, source, sha256, kind, title, pages, chunks, status, error"


class Catalog(JobsMixin, KbRowsMixin):
    """The catalog of one Zhixing home. Safe to share between threads of one process."""

    def __init__(self, path: Path | str) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_writable(path)
        private_file(path)  # before SQLite makes it (and its -wal, -shm) by the umask
        try:
            # Autocommit mode: single statements commit at once, `transaction()` opens explicit ones.
            conn = sqlite3.connect(
                str(path), check_same_thread=False, timeout=30, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise StoreError(f"The catalog at {path} cannot be opened: {exc}.") from exc
        self.path = path
        self._lock = threading.RLock()
        self.db = sqlite_utils.Database(conn)
        self.db.execute("PRAGMA journal_mode=WAL")
        # In WAL mode NORMAL keeps every commit atomic and consistent across crashes; it skips
        # the fsync per commit, which otherwise dominates a build of many small documents.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Bring a catalog written by an older Zhixing up to date, keeping what it holds."""
        columns = {c.name for c in self.db["knowledge_bases"].columns}
        if "analysis" not in columns:  # built before BM25 analysis: those indexes stay raw
            self.db.execute(
                "ALTER TABLE knowledge_bases ADD COLUMN analysis INTEGER NOT NULL DEFAULT 0"
            )
        if "created_by" not in columns:  # before creators were kept: nobody's, never undone
            with self.transaction():
                self.db.execute(
                    "ALTER TABLE knowledge_bases ADD COLUMN created_by TEXT NOT NULL DEFAULT ''"
                )
                self.db.execute(
                    "ALTER TABLE knowledge_bases ADD COLUMN filled INTEGER NOT NULL DEFAULT 0"
                )
                # What they held before is unknown: count each as filled (an admin deletes it).
                self.db.execute("UPDATE knowledge_bases SET filled = 1")
        job_columns = {c.name for c in self.db["jobs"].columns}
        for name, declaration in _JOB_COLUMNS:  # jobs before they were durable: not resumable
            if name not in job_columns:
                self.db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {declaration}")
        self.db.execute(_FILL_TRIGGER)

    def close(self) -> None:
        self.db.close()

    def deployment(self) -> str:
        """This home's deployment id: made once, kept, and part of every collection name, so
        two homes on one Milvus server never meet. A home whose knowledge bases predate it
        keeps "" (the collections it already filled)."""
        with self._lock:
            row = self._rows("SELECT value FROM home WHERE key = 'deployment'")
            if row:
                return str(row[0]["value"])
            legacy = bool(self._rows("SELECT 1 FROM knowledge_bases LIMIT 1"))
            value = "" if legacy else uuid.uuid4().hex[:12]
            self._execute(
                "INSERT OR IGNORE INTO home (key, value) VALUES ('deployment', ?)", (value,)
            )
            return str(self._rows("SELECT value FROM home WHERE key = 'deployment'")[0]["value"])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run a block atomically: all of its writes land, or none do."""
        with self._lock:
            conn = self.db.conn
            if conn.in_transaction:  # nested: the outer block commits
                yield
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # a failed COMMIT (full disk) leaves it open
                        with suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                raise _write_error(self.path, exc) from exc

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db.query(sql, params))

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self.db.execute(sql, params)

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
            self._execute(
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
        rows = self._rows("SELECT * FROM knowledge_bases WHERE name = ?", (name,))
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
        rows = self._rows("SELECT created_by, filled FROM knowledge_bases WHERE id = ?", (kb_id,))
        if not rows:
            raise NotFoundError(f"There is no knowledge base with id {kb_id}.")
        return str(rows[0]["created_by"]), bool(rows[0]["filled"])

    def kb_by_id(self, kb_id: int) -> KnowledgeBase:
        rows = self._rows("SELECT * FROM knowledge_bases WHERE id = ?", (kb_id,))
        if not rows:
            raise NotFoundError(f"There is no knowledge base with id {kb_id}.")
        return _kb(rows[0])

    def list_kbs(self) -> list[KnowledgeBase]:
        return [_kb(r) for r in self._rows("SELECT * FROM knowledge_bases ORDER BY name")]

    def kb_counts(self, kb_id: int) -> tuple[int, int]:
        """Return (documents, chunks) of a knowledge base, counting only indexed documents."""
        row = self._rows(
            "SELECT COUNT(*) AS docs, COALESCE(SUM(chunks), 0) AS chunks FROM documents"
            " WHERE kb_id = ? AND status = 'indexed'",
            (kb_id,),
        )[0]
        return int(row["docs"]), int(row["chunks"])

    def delete_kb(self, kb_id: int) -> None:
        with self.transaction():
            self._execute("DELETE FROM chunks WHERE kb_id = ?", (kb_id,))
            self._execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))

    # --- documents -------------------------------------------------------------------------

    def find_document(self, kb_id: int, source: str) -> StoredDocument | None:
        rows = self._rows(
            f"SELECT {_DOC_COLUMNS} FROM documents WHERE kb_id = ? AND source = ?", (kb_id, source)
        )
        return _document(rows[0]) if rows else None

    def list_documents(self, kb_id: int) -> list[StoredDocument]:
        rows = self._rows(
            f"SELECT {_DOC_COLUMNS} FROM documents WHERE kb_id = ? ORDER BY source", (kb_id,)
        )
        return [_document(r) for r in rows]

    def document_states(self, kb_id: int) -> dict[str, KnownDocument]:
        """Map each source of a knowledge base to its row, hash and state (a fast skip check)."""
        rows = self._rows(
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
            cursor = self._execute(
                "INSERT INTO documents (kb_id, source, sha256, kind, title, pages, chunks, status,"
                " added_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'chunked', ?)",
                (kb_id, source, sha256, kind, title, pages, len(chunks), time.time()),
            )
            doc_id = int(cursor.lastrowid or 0)
            self.db.conn.executemany(
                "INSERT INTO chunks (document_id, kb_id, ordinal, text, heading_path, page_start,"
                " page_end, line_start, line_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    )
                    for c in chunks
                ],
            )
            ids = [
                r["id"]
                for r in self._rows(
                    "SELECT id FROM chunks WHERE document_id = ? ORDER BY ordinal", (doc_id,)
                )
            ]
        return doc_id, ids

    def record_failure(
        self, kb_id: int, *, source: str, sha256: str, kind: str, error: str
    ) -> None:
        """Keep a failed document visible (status `failed`, with its error) without chunks."""
        with self.transaction():
            self._execute("DELETE FROM documents WHERE kb_id = ? AND source = ?", (kb_id, source))
            self._execute(
                "INSERT INTO documents (kb_id, source, sha256, kind, status, error, added_at)"
                " VALUES (?, ?, ?, ?, 'failed', ?, ?)",
                (kb_id, source, sha256, kind, error, time.time()),
            )

    def mark_indexed(self, doc_ids: Iterable[int]) -> None:
        ids = list(doc_ids)
        if not ids:
            return
        with self.transaction():
            self.db.conn.executemany(
                "UPDATE documents SET status = 'indexed', error = '' WHERE id = ?",
                [(i,) for i in ids],
            )

    def mark_removing(self, doc_ids: Iterable[int]) -> None:
        """Flag documents whose removal has begun, so an interrupted removal is never `indexed`."""
        with self.transaction():
            self.db.conn.executemany(
                "UPDATE documents SET status = 'removing' WHERE id = ?", [(i,) for i in doc_ids]
            )

    def delete_document(self, doc_id: int) -> None:
        with self.transaction():
            self._execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
            self._execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def documents_version(self, kb_id: int) -> tuple[int, int, int]:
        """(documents, newest id, indexed) of a knowledge base: it changes whenever the set of
        indexed documents may have, so a cache keyed by it never serves a stale one."""
        row = self._rows(
            "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS newest,"
            " COALESCE(SUM(status = 'indexed'), 0) AS indexed FROM documents WHERE kb_id = ?",
            (kb_id,),
        )[0]
        return int(row["n"]), int(row["newest"]), int(row["indexed"])

    def lead_chunks(self, kb_id: int) -> list[tuple[str, int, int]]:
        """(title, id of its first chunk, document id) for every indexed document of a
        knowledge base."""
        rows = self._rows(
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
        rows = self._rows(
            "SELECT c.id, c.document_id, c.kb_id, c.ordinal, c.text, c.heading_path, c.page_start,"
            " c.page_end, c.line_start, c.line_end, d.source, d.title, d.status, k.name AS kb"
            " FROM chunks c JOIN documents d ON d.id = c.document_id"
            " JOIN knowledge_bases k ON k.id = c.kb_id"
            f" WHERE c.id IN ({marks})",
            list(chunk_ids),
        )
        for row in rows:
            row["heading_path"] = tuple(json.loads(row["heading_path"]))
        return {r["id"]: r for r in rows}


KB_NAME_MAX = 64
KB_NAME_RULE = (
    f"A knowledge base needs a name of 1 to {KB_NAME_MAX} characters (Chinese is fine) with no "
    "control characters, no '/' or '\\', and not starting with '@' (which picks knowledge bases "
    "in a search)"
)


def _check_kb_name(name: str) -> str:
    """Return `name` stripped, or raise StoreError quoting the rule it breaks.

    Quotes and SQL or Milvus syntax are allowed: names only ever reach SQLite as bound
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


def _check_writable(path: Path) -> None:
    """Refuse a home Zhixing cannot write, before anything is opened (or half-written).

    A real write probe, not the mode bits: root passes those, a read-only mount does not.
    """
    probe = path.parent / f".zhixing-write-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600))
        os.unlink(probe)
        if path.exists():
            with path.open("ab"):
                pass
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise StoreError(_FULL.format(folder=path.parent)) from None
        raise StoreError(_READ_ONLY.format(folder=path.parent, why=exc.strerror)) from None


_READ_ONLY = (
    "The Zhixing home at {folder} is read-only ({why}); make it writable, or set ZHIXING_HOME to"
    " a folder Zhixing may write."
)
_FULL = (
    "The disk holding {folder} is full (or failing); free some space, then run the command"
    " again: what was built before is unchanged."
)


def _write_error(path: Path, exc: sqlite3.OperationalError) -> StoreError:
    """Word a failed catalog write: full disk, read-only file, or what SQLite said."""
    text = str(exc)
    if "disk is full" in text or "disk I/O error" in text:
        # A write refused for lack of space reads "database or disk is full"; one refused
        # past a file-size limit (EFBIG), "disk I/O error".
        return StoreError(_FULL.format(folder=path.parent))
    if "readonly" in text or "read-only" in text:
        return StoreError(_READ_ONLY.format(folder=path.parent, why=text))
    return StoreError(f"The catalog at {path} refused a write: {text}.")


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
