"""A home's catalog on PostgreSQL (docs/architecture.md §3), with psycopg 3: the connection every
store of a Postgres home shares, the same surface as SQLite's `Database` (sqlite.py).

One connection in autocommit mode, guarded by a re-entrant lock, as with SQLite. `transaction()`
opens a block and then takes one advisory lock of the database, held until it ends: write blocks
run one at a time across every process on the catalog, as SQLite's `BEGIN IMMEDIATE` makes them,
so a store's check-then-write (a build's claim, a name taken) holds on Postgres too. Statements
keep SQLite's `?` placeholders (dialect.py): `_pyformat` turns them into psycopg's `%s`.
`snapshot()` reads a block in one REPEATABLE READ snapshot (a copy of every table while others
write). Beside the stores' connection: the pool LangGraph's checkpointer runs on (`open_pool`),
a probe that counts the catalog's tables and makes nothing (`catalog_tables`), and what a
restore made in an empty database, dropped again when it fails (`schema_objects`,
`drop_objects`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql as pgsql
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from ..errors import StoreError
from .dialect import POSTGRES

__all__ = [
    "PostgresDatabase",
    "catalog_tables",
    "drop_objects",
    "open_pool",
    "redacted",
    "schema_objects",
]

# The advisory lock a write block holds (any constant: one catalog is one database).
_WRITER_LOCK = 0x5A48_4958_494E_47  # "ZHIXING"


class PostgresDatabase:
    """One PostgreSQL database, opened for the stores of a home. Safe to share between threads."""

    dialect = POSTGRES
    Error = psycopg.Error
    IntegrityError = psycopg.IntegrityError

    def __init__(self, uri: str) -> None:
        self.uri = uri
        # Where the catalog is, for a sentence or a key: the address without its password.
        self.path = Path(redacted(uri))
        try:
            self._conn = psycopg.connect(uri, autocommit=True, row_factory=dict_row)
        except psycopg.Error as exc:
            raise _unopened(uri, exc) from exc
        self._lock = threading.RLock()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run a query; return its rows as dicts keyed by column name."""
        with self._lock:
            cursor = self._conn.execute(_pyformat(sql), tuple(params))
            return cursor.fetchall() if cursor.description is not None else []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[dict[str, Any]]:
        """Run one statement (its cursor tells `rowcount`)."""
        with self._lock:
            return self._conn.execute(_pyformat(sql), tuple(params))

    def executemany(
        self, sql: str, params: Iterable[Sequence[Any]]
    ) -> psycopg.Cursor[dict[str, Any]]:
        """Run one statement once per parameter row."""
        with self._lock:
            cursor = self._conn.cursor()
            cursor.executemany(_pyformat(sql), [tuple(p) for p in params])
            return cursor

    def executescript(self, script: str) -> None:
        """Run statements separated by `;` (a store's schema), inside a write block: two
        processes creating the same table at once would otherwise collide."""
        with self.transaction():
            # Without parameters psycopg sends the text as one simple query, statements and all.
            self._conn.execute(script.encode())

    def columns(self, table: str) -> set[str]:
        """The names of a table's columns (what a migration checks before ALTER TABLE)."""
        return {
            row["name"]
            for row in self.rows(
                "SELECT column_name AS name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ?",
                (table,),
            )
        }

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run a block atomically: all of its writes land, or none do. A nested block joins the
        outer one, which commits."""
        with self._lock:
            conn = self._conn
            if conn.info.transaction_status != TransactionStatus.IDLE:  # nested
                yield
                return
            try:
                conn.execute("BEGIN")
                try:
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITER_LOCK,))
                    yield
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.info.transaction_status != TransactionStatus.IDLE:
                        with suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                    raise
            except psycopg.OperationalError as exc:
                raise StoreError(
                    f"The catalog at {self.path} refused a write: {_first_line(exc)}."
                ) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read a block in one snapshot of the database (REPEATABLE READ, read only): every
        query inside it sees the same committed state while other processes write."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield
            finally:
                if conn.info.transaction_status != TransactionStatus.IDLE:
                    with suppress(psycopg.Error):
                        conn.execute("ROLLBACK")  # read only: nothing to keep

    def close(self) -> None:
        self._conn.close()


def open_pool(uri: str, *, timeout_s: float) -> Any:
    """A pool of one connection to the database at `uri`, made as LangGraph's Postgres
    checkpointer requires: autocommit (its `setup` commits the tables it makes),
    `prepare_threshold=0` (no prepared statements, which a pooler such as PgBouncer would hand
    to another session), `dict_row` (it reads rows by column name). One connection: the saver
    locks around each use of it anyway; the pool checks it and replaces one the server
    dropped."""
    from psycopg_pool import ConnectionPool, PoolTimeout

    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
        uri,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        min_size=1,
        max_size=1,
        open=False,
        check=ConnectionPool.check_connection,
        name="zhixing-checkpoints",
    )
    try:
        pool.open(wait=True, timeout=timeout_s)
    except PoolTimeout as exc:
        pool.close()
        raise StoreError(
            f"The catalog at {redacted(uri)} cannot be reached within {timeout_s:.0f} s; check"
            " ZHIXING_CATALOG_URI and that the server is up."
        ) from exc
    return pool


def catalog_tables(uri: str, *, timeout_s: float = 2.0) -> set[str]:
    """The names of the tables in the database's current schema, read in one read-only query
    that makes nothing (a probe, a check that a home or a restore's target exists)."""
    try:
        with psycopg.connect(
            uri, autocommit=True, connect_timeout=max(2, round(timeout_s))
        ) as conn:
            conn.read_only = True
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            ).fetchall()
    except psycopg.Error as exc:
        raise _unopened(uri, exc) from exc
    return {str(row[0]) for row in rows}


def _unopened(uri: str, exc: psycopg.Error) -> StoreError:
    return StoreError(
        f"The catalog at {redacted(uri)} cannot be opened: {_first_line(exc)}; check"
        " ZHIXING_CATALOG_URI and that the server is up."
    )


def schema_objects(uri: str) -> set[tuple[str, str]]:
    """The tables and functions of the database's current schema, as (kind, name) pairs."""
    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT 'table', table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
                " UNION SELECT 'function', CAST(CAST(p.oid AS regprocedure) AS text)"
                " FROM pg_proc p WHERE p.pronamespace = to_regnamespace(current_schema())"
            ).fetchall()
    except psycopg.Error as exc:
        raise _unopened(uri, exc) from exc
    return {(str(kind), str(name)) for kind, name in rows}


def drop_objects(uri: str, objects: Iterable[tuple[str, str]]) -> None:
    """Drop these tables and functions (`schema_objects`' pairs), with what depends on them,
    in one transaction: what a failed restore made in a database that was empty."""
    with psycopg.connect(uri) as conn, conn.transaction():
        for kind, name in sorted(objects, reverse=True):  # tables before the functions
            if kind == "table":
                conn.execute(
                    pgsql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(pgsql.Identifier(name))
                )
            else:  # a regprocedure's text: the name and argument types, quoted as needed
                conn.execute(
                    pgsql.SQL("DROP FUNCTION IF EXISTS {} CASCADE").format(pgsql.SQL(name))
                )


def redacted(uri: str) -> str:
    """A connection URI without its password (what a message or a log may show)."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@lru_cache(maxsize=512)
def _pyformat(sql: str) -> bytes:
    """SQLite's `?` placeholders as psycopg's `%s`, and a literal `%` doubled (psycopg reads
    `%` anywhere in the text). A `?` inside a quoted string or identifier stays."""
    out, quote = [], ""
    for char in sql:
        if quote:
            quote = "" if char == quote else quote  # '' inside a string closes and reopens: fine
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out).encode()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
