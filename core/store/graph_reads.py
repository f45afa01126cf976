"""The entity graph's queries (docs/architecture.md §3): what search, the graph page, an export and
a build's estimate read from the question index and the entity graph.

`GraphReader` is the read side, complete on its own; `GraphStore` (core/store/graph.py) adds
the writes a build makes and owns the tables. Both run SQL only on the graph's tables: what
they need of the catalog's chunks, the caller passes in as ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models.graph import GraphStats
from .dialect import SqlDatabase

__all__ = ["MAX_DESCRIPTION", "GraphReader", "StoredEntity", "StoredRelation", "id_list"]

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


class GraphReader:
    """Questions, entities, relations and their mentions, read on the home's database."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def build_history(self, kb_id: int, chunk_ids: Sequence[int]) -> tuple[int, int, list[int]]:
        """What a knowledge base's earlier builds tell about its graph calls: (extracted chunks,
        similarity merges it holds, mentions of each entity whose descriptions exceed the limit).
        `chunk_ids`: the knowledge base's chunks (the catalog's `chunk_ids`)."""
        chunks = set(chunk_ids)
        rows = self.db.rows(
            f"SELECT COUNT(*) AS n FROM degraded_chunks WHERE chunk_id IN ({self.db.dialect.json_ids})",
            (id_list(chunks),),
        )
        extracted = len(chunks) - int(rows[0]["n"])
        if not extracted:
            return 0, 0, []
        # Each entity holds its own key as an alias; any other alias is a similarity merge.
        rows = self.db.rows(
            "SELECT COUNT(*) AS n FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
            " WHERE a.kb_id = ? AND (a.key != e.key OR a.type != e.type)",
            (kb_id,),
        )
        merges = int(rows[0]["n"]) if rows else 0
        # As `long_descriptions` decides: distinct mention descriptions past the limit.
        rows = self.db.rows(
            "SELECT k.n AS n FROM"
            " (SELECT entity_id, SUM(LENGTH(description)) AS size FROM"
            "  (SELECT DISTINCT m.entity_id, m.description FROM entity_mentions m"
            "   JOIN entities e ON e.id = m.entity_id WHERE e.kb_id = ? AND m.description != '')"
            "  AS said GROUP BY entity_id) d"
            " JOIN (SELECT m.entity_id, COUNT(DISTINCT m.chunk_id) AS n FROM entity_mentions m"
            "  JOIN entities e ON e.id = m.entity_id WHERE e.kb_id = ? GROUP BY m.entity_id) k"
            " ON k.entity_id = d.entity_id WHERE d.size > ?",
            (kb_id, kb_id, MAX_DESCRIPTION),
        )
        return extracted, merges, [int(r["n"]) for r in rows]

    def question_chunks(self, question_ids: Sequence[int]) -> dict[int, int]:
        """Map question ids to the chunk each belongs to."""
        if not question_ids:
            return {}
        marks = ",".join("?" * len(question_ids))
        rows = self.db.rows(
            f"SELECT id, chunk_id FROM questions WHERE id IN ({marks})", list(question_ids)
        )
        return {r["id"]: r["chunk_id"] for r in rows}

    def resolve(self, kb_id: int, key: str, type_: str) -> int | None:
        """Find the entity a normalized name already resolves to (its own key or an alias)."""
        rows = self.db.rows(
            "SELECT entity_id FROM entity_aliases WHERE kb_id = ? AND key = ? AND type = ?",
            (kb_id, key, type_),
        )
        return int(rows[0]["entity_id"]) if rows else None

    def long_descriptions(self, entity_ids: Iterable[int]) -> dict[int, tuple[str, str, list[str]]]:
        """Entities whose distinct mention descriptions together exceed the limit:
        id -> (name, type, descriptions), for an LLM summary."""
        out = {}
        for entity_id in set(entity_ids):
            parts = list(
                dict.fromkeys(
                    r["description"]
                    for r in self.db.rows(
                        "SELECT description FROM entity_mentions WHERE entity_id = ? AND"
                        " description != '' ORDER BY chunk_id",
                        (entity_id,),
                    )
                )
            )
            if sum(len(p) for p in parts) > MAX_DESCRIPTION:
                row = self.db.rows("SELECT name, type FROM entities WHERE id = ?", (entity_id,))
                if row:
                    out[entity_id] = (row[0]["name"], row[0]["type"], parts)
        return out

    def entity_text(self, entity_ids: Sequence[int]) -> dict[int, str]:
        """The text embedded for an entity (kind `entity`): name, type, aliases, description."""
        if not entity_ids:
            return {}
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.rows(
            f"SELECT id, name, type, aliases, description FROM entities WHERE id IN ({marks})",
            list(entity_ids),
        )
        out = {}
        for r in rows:
            aliases = json.loads(r["aliases"])
            head = r["name"] + (f" ({', '.join(aliases)})" if aliases else "")
            out[r["id"]] = f"{head} [{r['type']}] {r['description']}".strip()
        return out

    # --- reading ---------------------------------------------------------------------------

    def stats(self, kb_id: int) -> GraphStats:
        entities = self.db.rows(
            "SELECT type, COUNT(*) AS n FROM entities WHERE kb_id = ? GROUP BY type ORDER BY n DESC",
            (kb_id,),
        )
        relations = self.db.rows("SELECT COUNT(*) AS n FROM relations WHERE kb_id = ?", (kb_id,))[
            0
        ]["n"]
        return GraphStats(
            entities=sum(r["n"] for r in entities),
            relations=int(relations),
            types={r["type"]: r["n"] for r in entities},
        )

    def find_entities(self, kb_id: int, key: str) -> list[int]:
        """Entities whose name or alias normalizes to `key` (any type)."""
        rows = self.db.rows(
            "SELECT DISTINCT entity_id FROM entity_aliases WHERE kb_id = ? AND key = ?",
            (kb_id, key),
        )
        return [r["entity_id"] for r in rows]

    def mentions_of(self, entity_ids: Sequence[int]) -> list[tuple[int, int]]:
        """(entity id, chunk id) for every chunk that mentions one of the entities."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.rows(
            f"SELECT DISTINCT entity_id, chunk_id FROM entity_mentions WHERE entity_id IN ({marks})",
            list(entity_ids),
        )
        return [(r["entity_id"], r["chunk_id"]) for r in rows]

    def broader(self, entity_ids: Sequence[int], *, limit: int = 5) -> list[str]:
        """Names of the broader concepts of entities: targets of their is_a / part_of edges."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.rows(
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
        rows = self.db.rows(
            f"SELECT id FROM entities WHERE kb_id = ? AND id IN ({marks})",
            [kb_id, *entity_ids],
        )
        return [r["id"] for r in rows]

    def entities(self, entity_ids: Sequence[int]) -> list[StoredEntity]:
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.rows(
            f"SELECT * FROM entities WHERE id IN ({marks}) ORDER BY id", list(entity_ids)
        )
        mentions = self.db.rows(
            f"SELECT DISTINCT entity_id, chunk_id FROM entity_mentions WHERE entity_id IN ({marks})"
            " ORDER BY chunk_id",
            list(entity_ids),
        )
        chunks: dict[int, list[int]] = {}
        for m in mentions:
            chunks.setdefault(m["entity_id"], []).append(m["chunk_id"])
        order = {entity_id: i for i, entity_id in enumerate(entity_ids)}
        rows.sort(key=lambda r: order[r["id"]])  # in the order asked for: seeds first
        return [_entity(r, chunks.get(r["id"], [])) for r in rows]

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
            rows = self.db.rows(
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
                    edges[r["id"]] = _relation(r)
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
            " UNION ALL SELECT target_id FROM relations WHERE kb_id = ?) AS ends GROUP BY id) d"
            f" ON d.id = e.id WHERE {' AND '.join(where)}"
        )
        total = self.db.rows(f"SELECT COUNT(*) AS n {base}", params)[0]["n"]
        rows = self.db.rows(
            f"SELECT e.id, COALESCE(d.n, 0) AS degree {base} ORDER BY degree DESC, e.id LIMIT ?",
            [*params, limit],
        )
        return [(r["id"], r["degree"]) for r in rows], int(total)

    def degrees(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """How many relations touch each entity (0 for none)."""
        if not entity_ids:
            return {}
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.rows(
            "SELECT id, COUNT(*) AS n FROM ("
            f" SELECT source_id AS id FROM relations WHERE source_id IN ({marks})"
            f" UNION ALL SELECT target_id FROM relations WHERE target_id IN ({marks})) AS ends"
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
        rows = self.db.rows(
            f"SELECT * FROM relations WHERE source_id IN ({marks}) AND target_id IN ({marks})"
            " ORDER BY weight DESC, id",
            [*entity_ids, *entity_ids],
        )
        return [_relation(r) for r in rows]

    def dump(self, kb_id: int) -> tuple[list[StoredEntity], list[StoredRelation]]:
        """Every entity (with the chunks that mention it) and relation of one knowledge base,
        in id order: what an export writes."""
        rows = self.db.rows("SELECT * FROM entities WHERE kb_id = ? ORDER BY id", (kb_id,))
        chunks: dict[int, list[int]] = {}
        for m in self.db.rows(
            "SELECT DISTINCT m.entity_id, m.chunk_id FROM entity_mentions m"
            " JOIN entities e ON e.id = m.entity_id WHERE e.kb_id = ? ORDER BY m.chunk_id",
            (kb_id,),
        ):
            chunks.setdefault(m["entity_id"], []).append(m["chunk_id"])
        entities = [_entity(r, chunks.get(r["id"], [])) for r in rows]
        relations = self.db.rows("SELECT * FROM relations WHERE kb_id = ? ORDER BY id", (kb_id,))
        return entities, [_relation(r) for r in relations]

    def relations_of(self, entity_id: int) -> list[StoredRelation]:
        """Every relation of one entity, either direction, strongest first."""
        rows = self.db.rows(
            "SELECT * FROM relations WHERE source_id = ? OR target_id = ? ORDER BY weight DESC, id",
            (entity_id, entity_id),
        )
        return [_relation(r) for r in rows]


def _entity(r: dict[str, Any], chunks: list[int]) -> StoredEntity:
    return StoredEntity(
        id=r["id"],
        name=r["name"],
        type=r["type"],
        description=r["description"],
        aliases=json.loads(r["aliases"]),
        attributes=json.loads(r["attributes"]),
        chunks=chunks,
    )


def id_list(ids: Iterable[int]) -> str:
    """Ids as one JSON parameter, for `IN (<the dialect's json_ids>)`: any number of
    them, where `?` marks stop at SQLite's limit on parameters."""
    return json.dumps(sorted({int(i) for i in ids}))


def _relation(r: dict[str, Any]) -> StoredRelation:
    return StoredRelation(
        r["id"], r["source_id"], r["target_id"], r["type"], r["description"], r["weight"]
    )
