"""The catalog's tables (docs/architecture.md §3) and how a catalog written by an older Zhixing
is brought up to date, keeping what it holds.

`{id}` (AUTOINCREMENT, or an identity on Postgres: dialect.py fills the slots): ids are never
reused. Vector primary keys derive from them, so a vector left behind by an interrupted delete
can never be mistaken for a later row.
"""

from __future__ import annotations

from .dialect import SqlDatabase

__all__ = ["SCHEMA", "add_fill_trigger", "migrate"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS home (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS knowledge_bases (
    id {id},
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    build_mode TEXT NOT NULL,
    embedding TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    created_at {real} NOT NULL,
    analysis INTEGER NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL DEFAULT '',
    filled INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS documents (
    id {id},
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    pages INTEGER NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    added_at {real} NOT NULL,
    UNIQUE (kb_id, source)
);
CREATE TABLE IF NOT EXISTS chunks (
    id {id},
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
# Postgres runs a trigger's body as a function of its own. By dialect name.
_FILL_TRIGGER = {
    "sqlite": """
CREATE TRIGGER IF NOT EXISTS documents_fill AFTER INSERT ON documents
WHEN NEW.status != 'failed'
BEGIN
    UPDATE knowledge_bases SET filled = 1 WHERE id = NEW.kb_id AND filled = 0;
END
""",
    "postgresql": """
CREATE OR REPLACE FUNCTION documents_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE knowledge_bases SET filled = 1 WHERE id = NEW.kb_id AND filled = 0;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER documents_fill AFTER INSERT ON documents
FOR EACH ROW WHEN (NEW.status != 'failed') EXECUTE FUNCTION documents_fill();
""",
}


def migrate(db: SqlDatabase) -> None:
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


def add_fill_trigger(db: SqlDatabase) -> None:
    if db.dialect.name == "sqlite":
        db.execute(_FILL_TRIGGER["sqlite"])  # one statement: outside any transaction, as before
    else:
        db.executescript(_FILL_TRIGGER[db.dialect.name])
