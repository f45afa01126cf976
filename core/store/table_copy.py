"""Every table of one catalog database copied into another, across engines (docs/architecture.md
§3, §9): SQLite to PostgreSQL (a restore, a home moving to a team's server) and back (a backup
of a Postgres catalog into the one SQLite member a backup holds).

The target's stores have made its tables first, so each engine keeps its own DDL; the copy
moves rows only: the tables both databases have, the columns both tables have, parents before
the children their foreign keys point to, read in one snapshot of the source and written in
one transaction of the target (all of it lands, or none does). Ids keep their values, and the
highest id each table ever gave goes across too, so the target never gives a deleted row's id
again (vector keys derive from ids, docs/architecture.md §3). What only one engine can say (its
tables, their foreign keys and keys, its id counters) is written here once per engine, by the
dialect's name, as catalog_schema.py does for its trigger.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import StoreError
from .dialect import SqlDatabase

__all__ = ["copy_tables", "table_names"]

_BATCH = 2000  # rows read and written at a time: a big chunks table never sits in memory whole

# By dialect name: the queries that read a database's own description of itself.
_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'",
    "postgresql": "SELECT table_name AS name FROM information_schema.tables"
    " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
}
_PARENTS = {
    "sqlite": 'SELECT DISTINCT "table" AS name FROM pragma_foreign_key_list(?)',
    "postgresql": "SELECT DISTINCT CAST(CAST(confrelid AS regclass) AS text) AS name"
    " FROM pg_constraint WHERE contype = 'f' AND conrelid = CAST(? AS regclass)",
}
_KEY = {
    "sqlite": "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk",
    "postgresql": "SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a"
    " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
    " WHERE i.indrelid = CAST(? AS regclass) AND i.indisprimary ORDER BY a.attnum",
}
# Table -> the highest id it ever gave (a counter past the rows a delete took away).
_ISSUED = {
    "sqlite": "SELECT name, seq AS issued FROM sqlite_sequence",
    "postgresql": "SELECT CAST(table_name AS text) AS name, CAST(column_name AS text) AS id,"
    " COALESCE(pg_sequence_last_value(CAST(pg_get_serial_sequence(CAST(table_name AS text),"
    " CAST(column_name AS text)) AS regclass)), 0) AS issued FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND is_identity = 'YES'",
}


def table_names(db: SqlDatabase) -> set[str]:
    """The tables of the database (its current schema, on Postgres)."""
    return {str(row["name"]) for row in db.rows(_TABLES[db.dialect.name])}


def copy_tables(source: SqlDatabase, target: SqlDatabase) -> dict[str, int]:
    """Copy every row of the tables `source` and `target` both have into `target`, whose rows
    of those tables go first; return the rows copied per table."""
    copied: dict[str, int] = {}
    with source.snapshot(), target.transaction():
        tables = _in_order(target, table_names(source) & table_names(target))
        for table in reversed(tables):  # children first: no foreign key is left dangling
            target.execute(f"DELETE FROM {_quoted(table)}")
        for table in tables:
            columns = sorted(source.columns(table) & target.columns(table))
            try:
                copied[table] = _copy(source, target, table, columns)
            except (source.Error, target.Error) as exc:  # the block rolls back: nothing lands
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
                raise StoreError(
                    f"The table {table} cannot be copied into the catalog at {target.path}:"
                    f" {reason}."
                ) from exc
        issued = _issued(source)
        _keep_issued(target, {t: issued.get(t, 0) for t in tables})
    return copied


def _copy(source: SqlDatabase, target: SqlDatabase, table: str, columns: list[str]) -> int:
    names = ", ".join(_quoted(c) for c in columns)
    insert = f"INSERT INTO {_quoted(table)} ({names}) VALUES ({', '.join('?' * len(columns))})"
    count = 0
    for rows in _pages(source, table, columns):
        target.executemany(insert, [tuple(row[c] for c in columns) for row in rows])
        count += len(rows)
    return count


def _pages(source: SqlDatabase, table: str, columns: list[str]) -> Iterator[list[dict[str, Any]]]:
    """The table's rows a batch at a time, in the order of its primary key (of every column,
    for a table without one): the same order on every page of one snapshot."""
    key = [str(r["name"]) for r in source.rows(_KEY[source.dialect.name], (table,))] or columns
    select = (
        f"SELECT {', '.join(_quoted(c) for c in columns)} FROM {_quoted(table)}"
        f" ORDER BY {', '.join(_quoted(c) for c in key)} LIMIT ? OFFSET ?"
    )
    offset = 0
    while rows := source.rows(select, (_BATCH, offset)):
        yield rows
        offset += len(rows)


def _in_order(db: SqlDatabase, tables: set[str]) -> list[str]:
    """The tables, each after every table its foreign keys point to (a name order among
    equals, so a copy is the same every time)."""
    parents = {
        table: {str(r["name"]) for r in db.rows(_PARENTS[db.dialect.name], (table,))}
        & tables - {table}
        for table in tables
    }
    ordered: list[str] = []
    while parents:
        ready = sorted(t for t, needs in parents.items() if needs <= set(ordered))
        if not ready:
            raise StoreError(
                f"The tables {', '.join(sorted(parents))} refer to each other in a circle;"
                " they cannot be copied one after another."
            )
        ordered += ready
        for table in ready:
            del parents[table]
    return ordered


def _issued(db: SqlDatabase) -> dict[str, int]:
    """Table -> the highest id it ever gave."""
    if db.dialect.name == "sqlite" and "sqlite_sequence" not in {
        str(r["name"]) for r in db.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
    }:
        return {}  # no AUTOINCREMENT table was ever made
    return {str(r["name"]): int(r["issued"] or 0) for r in db.rows(_ISSUED[db.dialect.name])}


def _keep_issued(target: SqlDatabase, issued: dict[str, int]) -> None:
    """Set each id counter of the target past both its rows and the ids the source gave."""
    if target.dialect.name == "postgresql":
        for row in target.rows(_ISSUED["postgresql"]):
            table = str(row["name"])
            if table not in issued:
                continue
            column = _quoted(str(row["id"]))
            top = target.rows(f"SELECT COALESCE(MAX({column}), 0) AS top FROM {_quoted(table)}")
            value = max(issued[table], int(top[0]["top"]))
            if value > 0:  # a counter starts at 1: an empty, unused table keeps its own
                target.rows(
                    "SELECT setval(pg_get_serial_sequence(?, ?), ?)", (table, row["id"], value)
                )
        return
    # SQLite keeps AUTOINCREMENT's counter in sqlite_sequence (the inserts raised it to MAX(id)).
    counters = {str(r["name"]) for r in target.rows(_ISSUED["sqlite"])}
    for table, value in issued.items():
        if value <= 0 or not _autoincrement(target, table):
            continue
        if table in counters:
            target.execute(
                "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (value, table)
            )
        else:
            target.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, value))


def _autoincrement(db: SqlDatabase, table: str) -> bool:
    rows = db.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return bool(rows) and "AUTOINCREMENT" in str(rows[0]["sql"]).upper()


def _quoted(name: str) -> str:
    """A table's or column's name as an identifier both engines read (its own quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'
