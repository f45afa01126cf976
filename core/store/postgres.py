"""A home's catalog on PostgreSQL (docs/architecture.md §3), with psycopg 3: the connection every
store of a Postgres home shares, the same surface as SQLite's `Database` (sqlite.py).

One connection in autocommit mode, guarded by a re-entrant lock, as with SQLite. `transaction()`
opens a block and then takes one advisory lock of the database, held until it ends: write blocks
run one at a time across every process on the catalog, as SQLite's `BEGIN IMMEDIATE` makes them,
so a store's check-then-write (a build's claim, a name taken) holds on Postgres too. Statements
keep SQLite's `?` placeholders (dialect.py): `_pyformat` turns them into psycopg's `%s`.
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
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from ..errors import StoreError
from .dialect import POSTGRES

__all__ = ["PostgresDatabase"]

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
            raise StoreError(
                f"The catalog at {redacted(uri)} cannot be opened: {_first_line(exc)}; check"
                " ZHIXING_CATALOG_URI and that the server is up."
            ) from exc
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

    def close(self) -> None:
        self._conn.close()


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
