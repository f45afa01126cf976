"""The catalog's tables (docs/architecture.md §3) and how a catalog written by an older Zhixing
is brought up to date, keeping what it holds.

AUTOINCREMENT: ids are never reused. Vector primary keys derive from them, so a vector left
behind by an interrupted delete can never be mistaken for a later row.
"""

from __future__ import annotations

from .sqlite import Database

__all__ = ["SCHEMA", "add_fill_trigger", "migrate"]

SCHEMA = """
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
    ocr INTEGER NOT NULL DEFAULT 0,
    UNIQUE (document_id, ordinal)
);
CREATE INDEX IF NOT EXISTS chunks_kb ON chunks(kb_id);
"""

# A knowledge base that ever held a document stays `filled`, even once every document is removed:
# deleting it is then an admin's (docs/architecture.md §10). A failed document held no content
# and leaves it unfilled. Made after `migrate`, which adds the column to an older catalog.
_FILL_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS documents_fill AFTER INSERT ON documents
WHEN NEW.status != 'failed'
BEGIN
    UPDATE knowledge_bases SET filled = 1 WHERE id = NEW.kb_id AND filled = 0;
END
"""


def migrate(db: Database) -> None:
    """Add the columns of `knowledge_bases` and `chunks` that an older catalog lacks."""
    if "ocr" not in db.columns("chunks"):  # before OCR: every chunk came from a text layer
        db.execute("ALTER TABLE chunks ADD COLUMN ocr INTEGER NOT NULL DEFAULT 0")
    columns = db.columns("knowledge_bases")
    if "analysis" not in columns:  # built before BM25 analysis: those indexes stay raw
        db.execute("ALTER TABLE knowledge_bases ADD COLUMN analysis INTEGER NOT NULL DEFAULT 0")
    if "created_by" not in columns:  # before creators were kept: nobody's, never undone
        with db.transaction():
            db.execute("ALTER TABLE knowledge_bases ADD COLUMN created_by TEXT NOT NULL DEFAULT ''")
            db.execute("ALTER TABLE knowledge_bases ADD COLUMN filled INTEGER NOT NULL DEFAULT 0")
            # What they held before is unknown: count each as filled (an admin deletes it).
            db.execute("UPDATE knowledge_bases SET filled = 1")


def add_fill_trigger(db: Database) -> None:
    db.execute(_FILL_TRIGGER)
