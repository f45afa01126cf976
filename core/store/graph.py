"""The question index and the entity graph (docs/architecture.md §3): their tables, and the
writes a build, a removal and an import make.

Questions belong to a chunk. Entities and relations belong to a knowledge base and are merged
across chunks and documents; `entity_mentions` and `relation_mentions` record which chunk said
what, which is what makes removing a document exact: an entity or relation that no chunk
mentions any more is deleted, and a survivor's description is rebuilt from what remains. The
queries are `GraphReader`'s (core/store/graph_reads.py), which `GraphStore` extends.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .dialect import SqlDatabase
from .graph_reads import MAX_DESCRIPTION, GraphReader, StoredEntity, StoredRelation, id_list
from .kb_rows import Ids, Tables, dump_table, load_table

__all__ = [
    "GRAPH_TABLES",
    "MAX_DESCRIPTION",
    "GraphStore",
    "StoredEntity",
    "StoredRelation",
    "merge_descriptions",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (
    id {id},
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    kb_id INTEGER NOT NULL,
    text TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS questions_chunk ON questions(chunk_id);
CREATE TABLE IF NOT EXISTS entities (
    id {id},
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    aliases TEXT NOT NULL DEFAULT '[]',
    attributes TEXT NOT NULL DEFAULT '{}',
    UNIQUE (kb_id, key, type)
);
CREATE TABLE IF NOT EXISTS entity_aliases (
    kb_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    type TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (kb_id, key, type)
);
CREATE TABLE IF NOT EXISTS relations (
    id {id},
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    source_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    weight {real} NOT NULL DEFAULT 0,
    UNIQUE (kb_id, source_id, target_id, type)
);
CREATE TABLE IF NOT EXISTS entity_mentions (
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (entity_id, chunk_id, name)
);
CREATE INDEX IF NOT EXISTS entity_mentions_chunk ON entity_mentions(chunk_id);
CREATE TABLE IF NOT EXISTS relation_mentions (
    relation_id INTEGER NOT NULL REFERENCES relations(id) ON DELETE CASCADE,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    description TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (relation_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS relation_mentions_chunk ON relation_mentions(chunk_id);
CREATE TABLE IF NOT EXISTS degraded_chunks (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    reason TEXT NOT NULL
);
"""


# Relations that read the same both ways, stored once with the smaller entity id first.
SYMMETRIC = {"related_to"}
# The graph's tables in one knowledge base's dump (core/store/kb_rows.py), in load order.
GRAPH_TABLES = (
    "questions",
    "entities",
    "entity_aliases",
    "relations",
    "entity_mentions",
    "relation_mentions",
    "degraded_chunks",
)
# How a table finds its rows of a knowledge base, when not by its own `kb_id`.
_DUMP_WHERE = {
    "entity_mentions": "JOIN entities e ON e.id = t.entity_id WHERE e.kb_id = ?",
    "relation_mentions": "JOIN relations r ON r.id = t.relation_id WHERE r.kb_id = ?",
    "degraded_chunks": "WHERE t.chunk_id IN ({ids})",  # the dialect's JSON list of ids
}


class GraphStore(GraphReader):
    """The graph's tables on the home's database: `GraphReader`'s queries, and the writes."""

    def __init__(self, db: SqlDatabase) -> None:
        super().__init__(db)
        db.executescript(db.dialect.ddl(_SCHEMA))

    # --- questions -------------------------------------------------------------------------

    def add_questions(self, kb_id: int, rows: Sequence[tuple[int, str, int, int]]) -> list[int]:
        """Insert (chunk id, text, line_start, line_end) rows; return their ids in order."""
        ids = []
        with self.db.transaction():
            for chunk_id, text, start, end in rows:
                [row] = self.db.rows(
                    "INSERT INTO questions (chunk_id, kb_id, text, line_start, line_end)"
                    " VALUES (?, ?, ?, ?, ?) RETURNING id",
                    (chunk_id, kb_id, text, start, end),
                )
                ids.append(int(row["id"]))
        return ids

    def mark_degraded(self, chunk_ids: Sequence[int], reason: str = "invalid LLM output") -> None:
        """Record chunks whose extraction failed: kept and searchable by text, but unenriched."""
        if chunk_ids:
            with self.db.transaction():
                self.db.executemany(
                    "INSERT INTO degraded_chunks (chunk_id, reason) VALUES (?, ?)"
                    " ON CONFLICT (chunk_id) DO UPDATE SET reason = excluded.reason",
                    [(c, reason) for c in chunk_ids],
                )

    def create_entity(
        self, kb_id: int, *, key: str, type_: str, name: str, attributes: dict[str, str]
    ) -> int:
        with self.db.transaction():
            [row] = self.db.rows(
                "INSERT INTO entities (kb_id, key, type, name, attributes) VALUES (?, ?, ?, ?, ?)"
                " RETURNING id",
                (kb_id, key, type_, name, json.dumps(attributes, ensure_ascii=False)),
            )
            entity_id = int(row["id"])
            self.add_alias(kb_id, key, type_, entity_id)
        return entity_id

    def add_alias(self, kb_id: int, key: str, type_: str, entity_id: int) -> None:
        with self.db.transaction():  # also takes the database's lock: builds write from threads
            self.db.execute(
                "INSERT INTO entity_aliases (kb_id, key, type, entity_id)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (kb_id, key, type_, entity_id),
            )

    def mention_entity(
        self,
        entity_id: int,
        chunk_id: int,
        name: str,
        description: str,
        attributes: dict[str, str],
    ) -> None:
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO entity_mentions (entity_id, chunk_id, name, description)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (entity_id, chunk_id, name, description),
            )
            if attributes:
                row = self.db.rows("SELECT attributes FROM entities WHERE id = ?", (entity_id,))[0]
                merged = {**attributes, **json.loads(row["attributes"])}
                self.db.execute(
                    "UPDATE entities SET attributes = ? WHERE id = ?",
                    (json.dumps(merged, ensure_ascii=False), entity_id),
                )

    def relate(
        self, kb_id: int, source: int, target: int, type_: str, chunk_id: int, description: str
    ) -> int:
        """Record one mention of a relation; the relation's weight is its number of mentions."""
        if type_ in SYMMETRIC and source > target:
            source, target = target, source  # one edge for a symmetric relation, not two
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO relations (kb_id, source_id, target_id, type)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (kb_id, source, target, type_),
            )
            rel_id = int(
                self.db.rows(
                    "SELECT id FROM relations WHERE kb_id = ? AND source_id = ? AND target_id = ?"
                    " AND type = ?",
                    (kb_id, source, target, type_),
                )[0]["id"]
            )
            self.db.execute(
                "INSERT INTO relation_mentions (relation_id, chunk_id, description)"
                " VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (rel_id, chunk_id, description),
            )
        return rel_id

    def refresh(self, entity_ids: Iterable[int], relation_ids: Iterable[int] = ()) -> None:
        """Rebuild names, aliases, descriptions and weights from the mentions that remain."""
        with self.db.transaction():
            for entity_id in set(entity_ids):
                mentions = self.db.rows(
                    "SELECT name, description FROM entity_mentions WHERE entity_id = ?"
                    " ORDER BY chunk_id",
                    (entity_id,),
                )
                names = list(dict.fromkeys(m["name"] for m in mentions))
                row = self.db.rows("SELECT name FROM entities WHERE id = ?", (entity_id,))
                if not row:
                    continue
                name = row[0]["name"] if row[0]["name"] in names or not names else names[0]
                aliases = [n for n in names if n != name]
                description = merge_descriptions(m["description"] for m in mentions)
                self.db.execute(
                    "UPDATE entities SET name = ?, aliases = ?, description = ? WHERE id = ?",
                    (name, json.dumps(aliases, ensure_ascii=False), description, entity_id),
                )
            for rel_id in set(relation_ids):
                mentions = self.db.rows(
                    "SELECT description FROM relation_mentions WHERE relation_id = ?", (rel_id,)
                )
                self.db.execute(
                    "UPDATE relations SET weight = ?, description = ? WHERE id = ?",
                    (
                        float(len(mentions)),
                        merge_descriptions(m["description"] for m in mentions),
                        rel_id,
                    ),
                )

    def set_description(self, entity_id: int, description: str) -> None:
        with self.db.transaction():
            self.db.execute(
                "UPDATE entities SET description = ? WHERE id = ?", (description, entity_id)
            )

    # --- removal ---------------------------------------------------------------------------

    def forget_chunks(self, chunk_ids: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
        """Drop the mentions of chunks (those of documents being removed); return (orphan
        entities, orphan relations, surviving entities touched), after deleting the orphans and
        refreshing the survivors."""
        if not chunk_ids:
            return [], [], []
        chunks = (id_list(chunk_ids),)
        in_chunks = f"chunk_id IN ({self.db.dialect.json_ids})"
        with self.db.transaction():
            touched_e = [
                r["entity_id"]
                for r in self.db.rows(
                    f"SELECT DISTINCT entity_id FROM entity_mentions WHERE {in_chunks}", chunks
                )
            ]
            touched_r = [
                r["relation_id"]
                for r in self.db.rows(
                    f"SELECT DISTINCT relation_id FROM relation_mentions WHERE {in_chunks}", chunks
                )
            ]
            self.db.execute(f"DELETE FROM entity_mentions WHERE {in_chunks}", chunks)
            self.db.execute(f"DELETE FROM relation_mentions WHERE {in_chunks}", chunks)
            orphan_r = _without_mentions(self.db, "relation", touched_r)
            orphan_e = _without_mentions(self.db, "entity", touched_e)
            # Relations of a deleted entity go too (ON DELETE CASCADE), even if still mentioned.
            if orphan_e:
                m = ",".join("?" * len(orphan_e))
                orphan_r = sorted(
                    set(orphan_r)
                    | {
                        r["id"]
                        for r in self.db.rows(
                            f"SELECT id FROM relations WHERE source_id IN ({m}) OR target_id IN ({m})",
                            orphan_e + orphan_e,
                        )
                    }
                )
            _delete_ids(self.db, "relations", orphan_r)
            _delete_ids(self.db, "entities", orphan_e)
            survivors = sorted(set(touched_e) - set(orphan_e))
            self.refresh(survivors, set(touched_r) - set(orphan_r))
        return orphan_e, orphan_r, survivors

    # --- one knowledge base whole (core/store/kb_rows.py) ------------------------------------

    def dump_rows(self, kb_id: int, chunk_ids: Sequence[int]) -> Tables:
        """The rows of `GRAPH_TABLES` that belong to a knowledge base; `chunk_ids` are its
        chunks (the catalog's), which find its degraded chunks."""
        with self.db.transaction():  # one consistent snapshot
            return {
                table: dump_table(
                    self.db,
                    table,
                    _DUMP_WHERE.get(table, "WHERE t.kb_id = ?").format(
                        ids=self.db.dialect.json_ids
                    ),
                    (id_list(chunk_ids) if table == "degraded_chunks" else kb_id,),
                )
                for table in GRAPH_TABLES
            }

    def load_rows(
        self, kb_id: int, tables: Mapping[str, Sequence[Mapping[str, Any]]], ids: Ids
    ) -> None:
        """Insert a dump's graph rows into knowledge base `kb_id` under new ids, remapping their
        references through `ids` (the catalog's rows come first) and noting theirs in it."""
        with self.db.transaction():
            for table in GRAPH_TABLES:
                load_table(self.db, table, tables[table], kb_id, ids)


def merge_descriptions(parts: Iterable[str]) -> str:
    """Join distinct descriptions; when they grow long, keep the first ones that fit.

    Offline this is the summary: the earliest distinct statements, which for documents read in
    order are the defining ones.
    """
    out: list[str] = []
    size = 0
    seen: set[str] = set()
    for part in (p.strip() for p in parts if p and p.strip()):
        # The same sentence from a PDF and its Markdown twin differs only in spacing.
        key = "".join(part.split())
        if key in seen:
            continue
        seen.add(key)
        if size + len(part) > MAX_DESCRIPTION and out:
            break
        out.append(part)
        size += len(part) + 1
    return " ".join(out)[: MAX_DESCRIPTION + 200]


def _without_mentions(db: SqlDatabase, kind: str, ids: Sequence[int]) -> list[int]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    alive = {
        r["i"]
        for r in db.rows(
            f"SELECT DISTINCT {kind}_id AS i FROM {kind}_mentions WHERE {kind}_id IN ({marks})",
            list(ids),
        )
    }
    return sorted(set(ids) - alive)


def _delete_ids(db: SqlDatabase, table: str, ids: Sequence[int]) -> None:
    if ids:
        marks = ",".join("?" * len(ids))
        db.execute(f"DELETE FROM {table} WHERE id IN ({marks})", list(ids))
