"""One knowledge base's catalog rows, dumped and loaded whole (docs/architecture.md §4, §9).

A mixin of `Catalog`, for backup (core/backup): `dump_kb` reads every row that belongs to a
knowledge base in one consistent snapshot; `load_kb` inserts such a dump as a new knowledge base
under new ids, remapping every reference, in one transaction. The graph's tables live in the
catalog's database, so a dump holds the graph too. Vectors are the vector store's business.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..choices import DocumentState
from ..errors import ParseError, StoreError
from ..models import KnowledgeBase

__all__ = ["KB_TABLES", "KbRowsMixin"]

# Columns per table, in dependency order (a table only refers to tables before it). `kb_id` is
# left out: on load it is the new knowledge base's id.
KB_TABLES: dict[str, tuple[str, ...]] = {
    table: tuple(columns.split())
    for table, columns in {
        "documents": "id source sha256 kind title pages chunks status error added_at",
        "chunks": "id document_id ordinal text heading_path page_start page_end line_start line_end",
        "questions": "id chunk_id text line_start line_end",
        "entities": "id key type name description aliases attributes",
        "entity_aliases": "key type entity_id",
        "relations": "id source_id target_id type description weight",
        "entity_mentions": "entity_id chunk_id name description",
        "relation_mentions": "relation_id chunk_id description",
        "degraded_chunks": "chunk_id reason",
    }.items()
}
# Tables with a kb_id column; the others are found through the row they belong to (`t`).
_HAS_KB = {"documents", "chunks", "questions", "entities", "entity_aliases", "relations"}
_JOINS = {
    "entity_mentions": "JOIN entities e ON e.id = t.entity_id WHERE e.kb_id = ?",
    "relation_mentions": "JOIN relations r ON r.id = t.relation_id WHERE r.kb_id = ?",
    "degraded_chunks": "JOIN chunks c ON c.id = t.chunk_id WHERE c.kb_id = ?",
}
# Foreign-key column -> the table whose ids it holds.
_REFS = {"document_id": "documents", "chunk_id": "chunks", "entity_id": "entities"}
_REFS |= {"source_id": "entities", "target_id": "entities", "relation_id": "relations"}
# The knowledge base's own fields a dump carries (its name may change on load).
_KB_FIELDS = ("name", "description", "build_mode", "analysis", "created_at")

Ids = dict[str, dict[int, int]]  # table -> dumped id -> loaded id


class KbRowsMixin:
    """`dump_kb` and `load_kb` of `Catalog`."""

    # Provided by `Catalog` (declared for the type checker).
    db: Any
    transaction: Callable[[], AbstractContextManager[None]]
    create_kb: Callable[..., KnowledgeBase]

    def dump_kb(self, kb: KnowledgeBase) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
        """The knowledge base's own fields and every row of `KB_TABLES` that belongs to it."""
        with self.transaction():  # one consistent snapshot
            row = next(iter(self.db.query("SELECT * FROM knowledge_bases WHERE id = ?", [kb.id])))
            tables = {
                table: list(
                    self.db.query(
                        f"SELECT {', '.join(f't.{c}' for c in cols)} FROM {table} t"
                        f" {_JOINS.get(table, 'WHERE t.kb_id = ?')} ORDER BY t.rowid",
                        [kb.id],
                    )
                )
                for table, cols in KB_TABLES.items()
            }
        meta = {k: row[k] for k in _KB_FIELDS} | {"tags": list(kb.tags)}
        return meta, tables

    def load_kb(
        self,
        name: str,
        meta: Mapping[str, Any],
        tables: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        embedding: tuple[str, int],
    ) -> tuple[KnowledgeBase, Ids]:
        """Insert a dump as the new knowledge base `name`, in one transaction; return it and the
        new id of every dumped row. Its documents come in `chunked`: the caller marks them
        `indexed` once their vectors are written. ParseError when the dump is inconsistent."""
        ids: Ids = {t: {} for t in KB_TABLES}
        try:
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
                for table in KB_TABLES:
                    self._load_rows(table, tables[table], kb.id, ids)
        except sqlite3.Error as exc:
            raise StoreError(f"The catalog refused the knowledge base's rows: {exc}.") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"the knowledge base's own fields are garbled ({exc!r})") from exc
        return kb, ids

    def _load_rows(
        self, table: str, rows: Iterable[Mapping[str, Any]], kb_id: int, ids: Ids
    ) -> None:
        """Insert one table's rows with remapped keys, noting each new id in `ids`."""
        cols = KB_TABLES[table]
        own = [c for c in cols if c != "id"]
        marks = ", ".join("?" * (len(own) + (table in _HAS_KB)))
        kb_col = ", kb_id" if table in _HAS_KB else ""
        sql = f"INSERT INTO {table} ({', '.join(own)}{kb_col}) VALUES ({marks})"
        for number, row in enumerate(rows, 1):
            try:
                values = [_remap(ids, c, row[c]) for c in own] + ([kb_id] if kb_col else [])
                if table == "documents" and row["status"] == DocumentState.INDEXED:
                    values[own.index("status")] = "chunked"  # `indexed` once its vectors are in
                new_id = self.db.execute(sql, values).lastrowid
                if "id" in cols:
                    ids[table][int(row["id"])] = int(new_id or 0)
            except (KeyError, TypeError, ValueError, sqlite3.IntegrityError) as exc:
                raise ParseError(f"row {number} of {table} cannot be loaded ({exc})") from exc


def _remap(ids: Ids, column: str, value: Any) -> Any:
    """The new id for a foreign key (KeyError when it points at no dumped row)."""
    table = _REFS.get(column)
    return value if table is None else ids[table][int(value)]
