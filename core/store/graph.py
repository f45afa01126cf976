"""The question index and the entity graph in the SQLite catalog (docs/architecture.md §3).

Questions belong to a chunk. Entities and relations belong to a knowledge base and are merged
across chunks and documents; `entity_mentions` and `relation_mentions` record which chunk said
what, which is what makes removing a document exact: an entity or relation that no chunk
mentions any more is deleted, and a survivor's description is rebuilt from what remains.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import GraphStats
from .catalog import Catalog

__all__ = ["GraphStore", "StoredEntity", "StoredRelation"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    kb_id INTEGER NOT NULL,
    text TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS questions_chunk ON questions(chunk_id);
CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    source_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    weight REAL NOT NULL DEFAULT 0,
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
# A merged description longer than this is cut back to its first distinct sentences.
MAX_DESCRIPTION = 600


@dataclass
class StoredEntity:
    id: int
    name: str
    type: str
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)
    chunks: list[int] = field(default_factory=list)


@dataclass
class StoredRelation:
    id: int
    source: int
    target: int
    type: str
    description: str
    weight: float


class GraphStore:
    """Questions, entities, relations and their mentions, on the catalog's connection."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.db = catalog.db
        self.db.executescript(_SCHEMA)

    def build_history(self, kb_id: int) -> tuple[int, int, list[int]]:
        """What a knowledge base's earlier builds tell about its graph calls: (extracted chunks,
        similarity merges it holds, mentions of each entity whose descriptions exceed the limit)."""
        rows = self.catalog._rows(
            "SELECT COUNT(*) AS n FROM chunks c WHERE c.kb_id = ? AND NOT EXISTS"
            " (SELECT 1 FROM degraded_chunks d WHERE d.chunk_id = c.id)",
            (kb_id,),
        )
        chunks = int(rows[0]["n"]) if rows else 0
        if not chunks:
            return 0, 0, []
        # Each entity holds its own key as an alias; any other alias is a similarity merge.
        rows = self.catalog._rows(
            "SELECT COUNT(*) AS n FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
            " WHERE a.kb_id = ? AND (a.key != e.key OR a.type != e.type)",
            (kb_id,),
        )
        merges = int(rows[0]["n"]) if rows else 0
        # As GraphStore.long_descriptions decides: distinct mention descriptions past the limit.
        rows = self.catalog._rows(
            "SELECT k.n AS n FROM"
            " (SELECT entity_id, SUM(LENGTH(description)) AS size FROM"
            "  (SELECT DISTINCT m.entity_id, m.description FROM entity_mentions m"
            "   JOIN entities e ON e.id = m.entity_id WHERE e.kb_id = ? AND m.description != '')"
            "  GROUP BY entity_id) d"
            " JOIN (SELECT m.entity_id, COUNT(DISTINCT m.chunk_id) AS n FROM entity_mentions m"
            "  JOIN entities e ON e.id = m.entity_id WHERE e.kb_id = ? GROUP BY m.entity_id) k"
            " ON k.entity_id = d.entity_id WHERE d.size > ?",
            (kb_id, kb_id, MAX_DESCRIPTION),
        )
        return chunks, merges, [int(r["n"]) for r in rows]

    # --- questions -------------------------------------------------------------------------

    def add_questions(self, kb_id: int, rows: Sequence[tuple[int, str, int, int]]) -> list[int]:
        """Insert (chunk id, text, line_start, line_end) rows; return their ids in order."""
        ids = []
        with self.catalog.transaction():
            for chunk_id, text, start, end in rows:
                cursor = self.db.execute(
                    "INSERT INTO questions (chunk_id, kb_id, text, line_start, line_end)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (chunk_id, kb_id, text, start, end),
                )
                ids.append(int(cursor.lastrowid or 0))
        return ids

    def question_chunks(self, question_ids: Sequence[int]) -> dict[int, int]:
        """Map question ids to the chunk each belongs to."""
        if not question_ids:
            return {}
        marks = ",".join("?" * len(question_ids))
        rows = self.catalog._rows(
            f"SELECT id, chunk_id FROM questions WHERE id IN ({marks})", list(question_ids)
        )
        return {r["id"]: r["chunk_id"] for r in rows}

    def mark_degraded(self, chunk_ids: Sequence[int], reason: str = "invalid LLM output") -> None:
        """Record chunks whose extraction failed: kept and searchable by text, but unenriched."""
        if chunk_ids:
            with self.catalog.transaction():
                self.db.conn.executemany(
                    "INSERT OR REPLACE INTO degraded_chunks (chunk_id, reason) VALUES (?, ?)",
                    [(c, reason) for c in chunk_ids],
                )

    # --- entities --------------------------------------------------------------------------

    def resolve(self, kb_id: int, key: str, type_: str) -> int | None:
        """Find the entity a normalized name already resolves to (its own key or an alias)."""
        rows = self.catalog._rows(
            "SELECT entity_id FROM entity_aliases WHERE kb_id = ? AND key = ? AND type = ?",
            (kb_id, key, type_),
        )
        return int(rows[0]["entity_id"]) if rows else None

    def create_entity(
        self, kb_id: int, *, key: str, type_: str, name: str, attributes: dict[str, str]
    ) -> int:
        with self.catalog.transaction():
            cursor = self.db.execute(
                "INSERT INTO entities (kb_id, key, type, name, attributes) VALUES (?, ?, ?, ?, ?)",
                (kb_id, key, type_, name, json.dumps(attributes, ensure_ascii=False)),
            )
            entity_id = int(cursor.lastrowid or 0)
            self.add_alias(kb_id, key, type_, entity_id)
        return entity_id

    def add_alias(self, kb_id: int, key: str, type_: str, entity_id: int) -> None:
        with self.catalog.transaction():  # also takes the catalog's lock: builds write from threads
            self.db.execute(
                "INSERT OR IGNORE INTO entity_aliases (kb_id, key, type, entity_id)"
                " VALUES (?, ?, ?, ?)",
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
        with self.catalog.transaction():
            self.db.execute(
                "INSERT OR IGNORE INTO entity_mentions (entity_id, chunk_id, name, description)"
                " VALUES (?, ?, ?, ?)",
                (entity_id, chunk_id, name, description),
            )
            if attributes:
                row = self.catalog._rows(
                    "SELECT attributes FROM entities WHERE id = ?", (entity_id,)
                )[0]
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
        with self.catalog.transaction():
            self.db.execute(
                "INSERT OR IGNORE INTO relations (kb_id, source_id, target_id, type)"
                " VALUES (?, ?, ?, ?)",
                (kb_id, source, target, type_),
            )
            rel_id = int(
                self.catalog._rows(
                    "SELECT id FROM relations WHERE kb_id = ? AND source_id = ? AND target_id = ?"
                    " AND type = ?",
                    (kb_id, source, target, type_),
                )[0]["id"]
            )
            self.db.execute(
                "INSERT OR IGNORE INTO relation_mentions (relation_id, chunk_id, description)"
                " VALUES (?, ?, ?)",
                (rel_id, chunk_id, description),
            )
        return rel_id

    def refresh(self, entity_ids: Iterable[int], relation_ids: Iterable[int] = ()) -> None:
        """Rebuild names, aliases, descriptions and weights from the mentions that remain."""
        with self.catalog.transaction():
            for entity_id in set(entity_ids):
                mentions = self.catalog._rows(
                    "SELECT name, description FROM entity_mentions WHERE entity_id = ?"
                    " ORDER BY chunk_id",
                    (entity_id,),
                )
                names = list(dict.fromkeys(m["name"] for m in mentions))
                row = self.catalog._rows("SELECT name FROM entities WHERE id = ?", (entity_id,))
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
                mentions = self.catalog._rows(
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

    def long_descriptions(self, entity_ids: Iterable[int]) -> dict[int, tuple[str, str, list[str]]]:
        """Entities whose distinct mention descriptions together exceed the limit:
        id -> (name, type, descriptions), for an LLM summary."""
        out = {}
        for entity_id in set(entity_ids):
            parts = list(
                dict.fromkeys(
                    r["description"]
                    for r in self.catalog._rows(
                        "SELECT description FROM entity_mentions WHERE entity_id = ? AND"
                        " description != '' ORDER BY chunk_id",
                        (entity_id,),
                    )
                )
            )
            if sum(len(p) for p in parts) > MAX_DESCRIPTION:
                row = self.catalog._rows(
                    "SELECT name, type FROM entities WHERE id = ?", (entity_id,)
                )
                if row:
                    out[entity_id] = (row[0]["name"], row[0]["type"], parts)
        return out

    def set_description(self, entity_id: int, description: str) -> None:
        with self.catalog.transaction():
            self.db.execute(
                "UPDATE entities SET description = ? WHERE id = ?", (description, entity_id)
            )

    def entity_text(self, entity_ids: Sequence[int]) -> dict[int, str]:
        """The text embedded for an entity (kind `entity`): name, type, aliases, description."""
        if not entity_ids:
            return {}
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            f"SELECT id, name, type, aliases, description FROM entities WHERE id IN ({marks})",
            list(entity_ids),
        )
        out = {}
        for r in rows:
            aliases = json.loads(r["aliases"])
            head = r["name"] + (f" ({', '.join(aliases)})" if aliases else "")
            out[r["id"]] = f"{head} [{r['type']}] {r['description']}".strip()
        return out

    # --- removal ---------------------------------------------------------------------------

    def forget_documents(self, doc_ids: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
        """Drop the mentions of documents' chunks; return (orphan entities, orphan relations,
        surviving entities touched), after deleting the orphans and refreshing the survivors."""
        if not doc_ids:
            return [], [], []
        marks = ",".join("?" * len(doc_ids))
        chunk_sql = f"SELECT id FROM chunks WHERE document_id IN ({marks})"
        with self.catalog.transaction():
            touched_e = [
                r["entity_id"]
                for r in self.catalog._rows(
                    f"SELECT DISTINCT entity_id FROM entity_mentions WHERE chunk_id IN ({chunk_sql})",
                    list(doc_ids),
                )
            ]
            touched_r = [
                r["relation_id"]
                for r in self.catalog._rows(
                    "SELECT DISTINCT relation_id FROM relation_mentions"
                    f" WHERE chunk_id IN ({chunk_sql})",
                    list(doc_ids),
                )
            ]
            self.db.execute(
                f"DELETE FROM entity_mentions WHERE chunk_id IN ({chunk_sql})", list(doc_ids)
            )
            self.db.execute(
                f"DELETE FROM relation_mentions WHERE chunk_id IN ({chunk_sql})", list(doc_ids)
            )
            orphan_r = _without_mentions(self.catalog, "relation", touched_r)
            orphan_e = _without_mentions(self.catalog, "entity", touched_e)
            # Relations of a deleted entity go too (ON DELETE CASCADE), even if still mentioned.
            if orphan_e:
                m = ",".join("?" * len(orphan_e))
                orphan_r = sorted(
                    set(orphan_r)
                    | {
                        r["id"]
                        for r in self.catalog._rows(
                            f"SELECT id FROM relations WHERE source_id IN ({m}) OR target_id IN ({m})",
                            orphan_e + orphan_e,
                        )
                    }
                )
            _delete_ids(self.catalog, "relations", orphan_r)
            _delete_ids(self.catalog, "entities", orphan_e)
            survivors = sorted(set(touched_e) - set(orphan_e))
            self.refresh(survivors, set(touched_r) - set(orphan_r))
        return orphan_e, orphan_r, survivors

    # --- reading ---------------------------------------------------------------------------

    def stats(self, kb_id: int) -> GraphStats:
        entities = self.catalog._rows(
            "SELECT type, COUNT(*) AS n FROM entities WHERE kb_id = ? GROUP BY type ORDER BY n DESC",
            (kb_id,),
        )
        relations = self.catalog._rows(
            "SELECT COUNT(*) AS n FROM relations WHERE kb_id = ?", (kb_id,)
        )[0]["n"]
        return GraphStats(
            entities=sum(r["n"] for r in entities),
            relations=int(relations),
            types={r["type"]: r["n"] for r in entities},
        )

    def find_entities(self, kb_id: int, key: str) -> list[int]:
        """Entities whose name or alias normalizes to `key` (any type)."""
        rows = self.catalog._rows(
            "SELECT DISTINCT entity_id FROM entity_aliases WHERE kb_id = ? AND key = ?",
            (kb_id, key),
        )
        return [r["entity_id"] for r in rows]

    def mentions_of(self, entity_ids: Sequence[int]) -> list[tuple[int, int]]:
        """(entity id, chunk id) for every chunk that mentions one of the entities."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            f"SELECT DISTINCT entity_id, chunk_id FROM entity_mentions WHERE entity_id IN ({marks})",
            list(entity_ids),
        )
        return [(r["entity_id"], r["chunk_id"]) for r in rows]

    def broader(self, entity_ids: Sequence[int], *, limit: int = 5) -> list[str]:
        """Names of the broader concepts of entities: targets of their is_a / part_of edges."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            "SELECT e.name FROM relations r JOIN entities e ON e.id = r.target_id"
            f" WHERE r.source_id IN ({marks}) AND r.type IN ('is_a', 'part_of')"
            " ORDER BY r.weight DESC, r.id LIMIT ?",
            [*entity_ids, limit],
        )
        return list(dict.fromkeys(r["name"] for r in rows))

    def in_kb(self, kb_id: int, entity_ids: Sequence[int]) -> list[int]:
        """Those of the entity ids that belong to the knowledge base."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            f"SELECT id FROM entities WHERE kb_id = ? AND id IN ({marks})",
            [kb_id, *entity_ids],
        )
        return [r["id"] for r in rows]

    def entities(self, entity_ids: Sequence[int]) -> list[StoredEntity]:
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            f"SELECT * FROM entities WHERE id IN ({marks}) ORDER BY id", list(entity_ids)
        )
        mentions = self.catalog._rows(
            f"SELECT DISTINCT entity_id, chunk_id FROM entity_mentions WHERE entity_id IN ({marks})"
            " ORDER BY chunk_id",
            list(entity_ids),
        )
        chunks: dict[int, list[int]] = {}
        for m in mentions:
            chunks.setdefault(m["entity_id"], []).append(m["chunk_id"])
        order = {entity_id: i for i, entity_id in enumerate(entity_ids)}
        rows.sort(key=lambda r: order[r["id"]])  # in the order asked for: seeds first
        return [
            StoredEntity(
                id=r["id"],
                name=r["name"],
                type=r["type"],
                description=r["description"],
                aliases=json.loads(r["aliases"]),
                attributes=json.loads(r["attributes"]),
                chunks=chunks.get(r["id"], []),
            )
            for r in rows
        ]

    def neighbourhood(
        self, kb_id: int, seeds: Sequence[int], hops: int, *, limit: int = 200
    ) -> tuple[list[int], list[StoredRelation]]:
        """Breadth-first K-hop expansion from seed entities, strongest edges first."""
        seen = list(dict.fromkeys(seeds))
        frontier = list(seen)
        edges: dict[int, StoredRelation] = {}
        for _ in range(max(hops, 0)):
            if not frontier or len(seen) >= limit:
                break
            marks = ",".join("?" * len(frontier))
            rows = self.catalog._rows(
                "SELECT * FROM relations WHERE kb_id = ? AND"
                f" (source_id IN ({marks}) OR target_id IN ({marks})) ORDER BY weight DESC, id",
                [kb_id, *frontier, *frontier],
            )
            nxt = []
            for r in rows:
                for node in (r["source_id"], r["target_id"]):
                    if node not in seen and len(seen) < limit:
                        seen.append(node)
                        nxt.append(node)
                if r["source_id"] in seen and r["target_id"] in seen:
                    edges[r["id"]] = StoredRelation(
                        r["id"],
                        r["source_id"],
                        r["target_id"],
                        r["type"],
                        r["description"],
                        r["weight"],
                    )
            frontier = nxt
        return seen, list(edges.values())

    # --- browsing (the graph page) ---------------------------------------------------------

    def ranked_entities(
        self,
        kb_id: int,
        *,
        types: Sequence[str] | None = None,
        min_degree: int = 0,
        limit: int = 300,
    ) -> tuple[list[tuple[int, int]], int]:
        """(entity id, degree) of the best-connected entities, highest degree first, and how
        many entities pass the filters in all. `types` None or empty means every type."""
        where = ["e.kb_id = ?", "COALESCE(d.n, 0) >= ?"]
        params: list[Any] = [kb_id, kb_id, kb_id, min_degree]
        if types:
            where.append(f"e.type IN ({','.join('?' * len(types))})")
            params.extend(types)
        base = (
            "FROM entities e LEFT JOIN (SELECT id, COUNT(*) AS n FROM ("
            " SELECT source_id AS id FROM relations WHERE kb_id = ?"
            " UNION ALL SELECT target_id FROM relations WHERE kb_id = ?) GROUP BY id) d"
            f" ON d.id = e.id WHERE {' AND '.join(where)}"
        )
        total = self.catalog._rows(f"SELECT COUNT(*) AS n {base}", params)[0]["n"]
        rows = self.catalog._rows(
            f"SELECT e.id, COALESCE(d.n, 0) AS degree {base} ORDER BY degree DESC, e.id LIMIT ?",
            [*params, limit],
        )
        return [(r["id"], r["degree"]) for r in rows], int(total)

    def degrees(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many relations touch each entity (0 for none)."""
        if not entity_ids:
            return {}
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            "SELECT id, COUNT(*) AS n FROM ("
            f" SELECT source_id AS id FROM relations WHERE source_id IN ({marks})"
            f" UNION ALL SELECT target_id FROM relations WHERE target_id IN ({marks}))"
            " GROUP BY id",
            [*entity_ids, *entity_ids],
        )
        found = {r["id"]: int(r["n"]) for r in rows}
        return {e: found.get(e, 0) for e in entity_ids}

    def relations_among(self, entity_ids: Sequence[int]) -> list[StoredRelation]:
        """Relations whose two ends are both among the entities, strongest first."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.catalog._rows(
            f"SELECT * FROM relations WHERE source_id IN ({marks}) AND target_id IN ({marks})"
            " ORDER BY weight DESC, id",
            [*entity_ids, *entity_ids],
        )
        return [_relation(r) for r in rows]

    def dump(self, kb_id: int) -> tuple[list[StoredEntity], list[StoredRelation]]:
        """Every entity (with the chunks that mention it) and relation of one knowledge base,
        in id order: what an export writes."""
        rows = self.catalog._rows("SELECT * FROM entities WHERE kb_id = ? ORDER BY id", (kb_id,))
        chunks: dict[int, list[int]] = {}
        for m in self.catalog._rows(
            "SELECT DISTINCT m.entity_id, m.chunk_id FROM entity_mentions m"
            " JOIN entities e ON e.id = m.entity_id WHERE e.kb_id = ? ORDER BY m.chunk_id",
            (kb_id,),
        ):
            chunks.setdefault(m["entity_id"], []).append(m["chunk_id"])
        entities = [
            StoredEntity(
                id=r["id"],
                name=r["name"],
                type=r["type"],
                description=r["description"],
                aliases=json.loads(r["aliases"]),
                attributes=json.loads(r["attributes"]),
                chunks=chunks.get(r["id"], []),
            )
            for r in rows
        ]
        relations = self.catalog._rows(
            "SELECT * FROM relations WHERE kb_id = ? ORDER BY id", (kb_id,)
        )
        return entities, [_relation(r) for r in relations]

    def relations_of(self, entity_id: int) -> list[StoredRelation]:
        """Every relation of one entity, either direction, strongest first."""
        rows = self.catalog._rows(
            "SELECT * FROM relations WHERE source_id = ? OR target_id = ? ORDER BY weight DESC, id",
            (entity_id, entity_id),
        )
        return [_relation(r) for r in rows]


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


def _without_mentions(catalog: Catalog, kind: str, ids: Sequence[int]) -> list[int]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    alive = {
        r["i"]
        for r in catalog._rows(
            f"SELECT DISTINCT {kind}_id AS i FROM {kind}_mentions WHERE {kind}_id IN ({marks})",
            list(ids),
        )
    }
    return sorted(set(ids) - alive)


def _delete_ids(catalog: Catalog, table: str, ids: Sequence[int]) -> None:
    if ids:
        marks = ",".join("?" * len(ids))
        catalog.db.execute(f"DELETE FROM {table} WHERE id IN ({marks})", list(ids))


def _relation(r: dict[str, Any]) -> StoredRelation:
    return StoredRelation(
        r["id"], r["source_id"], r["target_id"], r["type"], r["description"], r["weight"]
    )
