"""One knowledge base's rows, dumped and loaded whole (docs/architecture.md §4, §9).

For backup (core/backup): `dump_kb` reads every row that belongs to a knowledge base in one
consistent snapshot; `load_kb` inserts such a dump as a new knowledge base under new ids,
remapping every reference, in one transaction. Each store dumps and loads its own tables (the
catalog its documents and chunks, the graph the rest) with `dump_table` and `load_table`; the
two functions here only put them together. Vectors are the vector store's business.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..choices import DocumentState
from ..errors import ParseError, StoreError
from ..models import KnowledgeBase
from .dialect import SqlDatabase, driver_errors

if TYPE_CHECKING:  # the Protocols name this module's types; the stores import its helpers
    from .contracts import CatalogProtocol, GraphStoreProtocol

__all__ = [
    "KB_TABLES",
    "Ids",
    "Tables",
    "dump_kb",
    "dump_table",
    "load_kb",
    "load_table",
    "required_columns",
]

# Columns per table, in dependency order (a table only refers to tables before it). `kb_id` is
# left out: on load it is the new knowledge base's id.
KB_TABLES: dict[str, tuple[str, ...]] = {
    table: tuple(columns.split())
    for table, columns in {
        "documents": "id source sha256 kind title pages chunks status error added_at",
        "chunks": "id document_id ordinal text heading_path page_start page_end line_start line_end"
        " ocr",
        "questions": "id chunk_id text line_start line_end",
        "entities": "id key type name description aliases attributes",
        "entity_aliases": "key type entity_id",
        "relations": "id source_id target_id type description weight",
        "entity_mentions": "entity_id chunk_id name description",
        "relation_mentions": "relation_id chunk_id description",
        "degraded_chunks": "chunk_id reason",
    }.items()
}
# Columns a backup written before them lacks, and what such a row holds instead.
_ADDED = {("chunks", "ocr"): 0}
# Tables with a kb_id column; the others are found through the row they belong to.
_HAS_KB = {"documents", "chunks", "questions", "entities", "entity_aliases", "relations"}
# Foreign-key column -> the table whose ids it holds.
_REFS = {"document_id": "documents", "chunk_id": "chunks", "entity_id": "entities"}
_REFS |= {"source_id": "entities", "target_id": "entities", "relation_id": "relations"}

Ids = dict[str, dict[int, int]]  # table -> dumped id -> loaded id
Tables = dict[str, list[dict[str, Any]]]  # table -> its rows, as `KB_TABLES` names the columns


def dump_kb(
    catalog: CatalogProtocol, graph: GraphStoreProtocol, kb: KnowledgeBase
) -> tuple[dict[str, Any], Tables]:
    """The knowledge base's own fields and every row of `KB_TABLES` that belongs to it."""
    with catalog.transaction():  # one consistent snapshot: the stores share the home's file
        meta, tables = catalog.dump_rows(kb)
        tables |= graph.dump_rows(kb.id, [int(r["id"]) for r in tables["chunks"]])
    return meta, {table: tables[table] for table in KB_TABLES}


def load_kb(
    catalog: CatalogProtocol,
    graph: GraphStoreProtocol,
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
        with catalog.transaction():
            kb = catalog.load_rows(name, meta, tables, ids, embedding=embedding)
            graph.load_rows(kb.id, tables, ids)
    except driver_errors() as exc:
        raise StoreError(f"The catalog refused the knowledge base's rows: {exc}.") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"the knowledge base's own fields are garbled ({exc!r})") from exc
    return kb, ids


def dump_table(
    db: SqlDatabase, table: str, where: str, params: Sequence[Any]
) -> list[dict[str, Any]]:
    """The `KB_TABLES` columns of the rows of `table` (as `t`) that `where` picks, in the order
    they were written (by id; SQLite's rowid where a table has none)."""
    names = KB_TABLES[table]
    columns = ", ".join(f"t.{c}" for c in names)
    order = "t.id" if "id" in names else _unnumbered_order(db, names)
    return db.rows(f"SELECT {columns} FROM {table} t {where} ORDER BY {order}", params)


def load_table(
    db: SqlDatabase, table: str, rows: Iterable[Mapping[str, Any]], kb_id: int, ids: Ids
) -> None:
    """Insert one table's rows with remapped keys, noting each new id in `ids`."""
    cols = KB_TABLES[table]
    own = [c for c in cols if c != "id"]
    marks = ", ".join("?" * (len(own) + (table in _HAS_KB)))
    kb_col = ", kb_id" if table in _HAS_KB else ""
    returning = " RETURNING id" if "id" in cols else ""
    sql = f"INSERT INTO {table} ({', '.join(own)}{kb_col}) VALUES ({marks}){returning}"
    for number, row in enumerate(rows, 1):
        try:
            values = [_remap(ids, c, _value(row, table, c)) for c in own]
            values += [kb_id] if kb_col else []
            if table == "documents" and row["status"] == DocumentState.INDEXED:
                values[own.index("status")] = "chunked"  # `indexed` once its vectors are in
            written = db.rows(sql, values)
            if returning:
                ids[table][int(row["id"])] = int(written[0]["id"])
        except (KeyError, TypeError, ValueError, db.IntegrityError) as exc:
            raise ParseError(f"row {number} of {table} cannot be loaded ({exc})") from exc


def required_columns(table: str) -> tuple[str, ...]:
    """The columns a dumped row of `table` must have: all but those added since (`_ADDED`)."""
    return tuple(c for c in KB_TABLES[table] if (table, c) not in _ADDED)


def _unnumbered_order(db: SqlDatabase, columns: Sequence[str]) -> str:
    """The order of a table without ids: SQLite's rowid (the order rows were written); on
    Postgres, which keeps no such order, every column (one order, the same at every dump)."""
    if db.dialect.name == "sqlite":
        return "t.rowid"
    return ", ".join(f"t.{c}" for c in columns)


def _value(row: Mapping[str, Any], table: str, column: str) -> Any:
    if column not in row and (table, column) in _ADDED:
        return _ADDED[table, column]
    return row[column]


def _remap(ids: Ids, column: str, value: Any) -> Any:
    """The new id for a foreign key (KeyError when it points at no dumped row)."""
    table = _REFS.get(column)
    return value if table is None else ids[table][int(value)]
