"""One home's SQLite file (docs/architecture.md §3): the connection every SQLite store shares.

`Database` opens `catalog.db` owner-only, in WAL mode with foreign keys, in autocommit mode:
a single statement commits at once, `transaction()` makes a block all-or-nothing and
`snapshot()` reads one in one snapshot (a copy of every table, store/table_copy.py). One
re-entrant lock guards the connection, so the threads of one process share it. The stores of a
home (catalog, jobs, users, runs, notebooks, graph, LLM cache) each run SQL on their own tables
only, through `rows`, `execute`, `executemany` and `executescript` (the `SqlDatabase` Protocol of
dialect.py, which a Postgres catalog implements too: postgres.py).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..home import private_file
from .dialect import SQLITE

__all__ = ["Database", "count_tables"]


class Database:
    """One SQLite file, opened for the stores of a home. Safe to share between threads."""

    dialect = SQLITE
    Error = sqlite3.Error
    IntegrityError = sqlite3.IntegrityError

    def __init__(self, path: Path | str) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_writable(path)
        private_file(path)  # before SQLite makes it (and its -wal, -shm) by the umask
        try:
            # Autocommit mode: single statements commit at once, `transaction()` opens explicit ones.
            self._conn = sqlite3.connect(
                str(path), check_same_thread=False, timeout=30, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise StoreError(f"The catalog at {path} cannot be opened: {exc}.") from exc
        self.path = path
        self._lock = threading.RLock()
        self.execute("PRAGMA journal_mode=WAL")
        # In WAL mode NORMAL keeps every commit atomic and consistent across crashes; it skips
        # the fsync per commit, which otherwise dominates a build of many small documents.
        self.execute("PRAGMA synchronous=NORMAL")
        self.execute("PRAGMA foreign_keys=ON")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run a query; return its rows as dicts keyed by column name."""
        with self._lock:
            cursor = self._conn.execute(sql, params)
            names = [column[0] for column in cursor.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement (its cursor tells `lastrowid` and `rowcount`)."""
        with self._lock:
            return self._conn.execute(sql, params)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        """Run one statement once per parameter row."""
        with self._lock:
            return self._conn.executemany(sql, params)

    def executescript(self, script: str) -> None:
        """Run statements separated by `;` (a store's schema)."""
        with self._lock:
            if not self._conn.in_transaction:
                self._conn.executescript(script)
                return
            # Inside a transaction statement by statement: `executescript` would commit it first.
            for statement in _statements(script):
                self._conn.execute(statement)

    def columns(self, table: str) -> set[str]:
        """The names of a table's columns (what a migration checks before ALTER TABLE)."""
        return {row["name"] for row in self.rows(f"PRAGMA table_info({table})")}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run a block atomically: all of its writes land, or none do. A nested block joins the
        outer one, which commits."""
        with self._lock:
            conn = self._conn
            if conn.in_transaction:  # nested: the outer block commits
                yield
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # a failed COMMIT (full disk) leaves it open
                        with suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                raise _write_error(self.path, exc) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read a block in one snapshot of the database: a read transaction, which under WAL
        sees one committed state and makes no writer wait."""
        with self._lock:
            self._conn.execute("BEGIN DEFERRED")
            try:
                yield
            finally:
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")  # read only: nothing to keep

    def close(self) -> None:
        self._conn.close()


def count_tables(path: Path | str, *, timeout_s: float = 2.0) -> int:
    """Open a catalog read-only and count its tables: one query that neither creates the file
    nor writes to it (a health probe of a home another process serves)."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(
            f"There is no catalog at {path}; check ZHIXING_HOME, or open the home once (the app"
            " or any `zhixing` command) to create it."
        )
    try:
        # mode=ro: a probe must not make a catalog in a misspelt home, nor take a write lock;
        # in WAL mode a reader waits on no writer, so the app's builds never slow it.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout_s)
        try:
            row = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"The catalog at {path} cannot be read: {exc}.") from exc
    return int(row[0])


def _statements(script: str) -> Iterator[str]:
    """The complete statements of a script (a trigger's body keeps its own `;`)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\n;"):
                yield pending
            pending = ""
    if pending.strip(" \t\n;"):
        yield pending


def _check_writable(path: Path) -> None:
    """Refuse a home Zhixing cannot write, before anything is opened (or half-written).

    A real write probe, not the mode bits: root passes those, a read-only mount does not.
    """
    probe = path.parent / f".zhixing-write-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600))
        os.unlink(probe)
        if path.exists():
            with path.open("ab"):
                pass
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise StoreError(_FULL.format(folder=path.parent)) from None
        raise StoreError(_READ_ONLY.format(folder=path.parent, why=exc.strerror)) from None


_READ_ONLY = (
    "The Zhixing home at {folder} is read-only ({why}); make it writable, or set ZHIXING_HOME to"
    " a folder Zhixing may write."
)
_FULL = (
    "The disk holding {folder} is full (or failing); free some space, then run the command"
    " again: what was built before is unchanged."
)


def _write_error(path: Path, exc: sqlite3.OperationalError) -> StoreError:
    """Word a failed catalog write: full disk, read-only file, or what SQLite said."""
    text = str(exc)
    if "disk is full" in text or "disk I/O error" in text:
        # A write refused for lack of space reads "database or disk is full"; one refused
        # past a file-size limit (EFBIG), "disk I/O error".
        return StoreError(_FULL.format(folder=path.parent))
    if "readonly" in text or "read-only" in text:
        return StoreError(_READ_ONLY.format(folder=path.parent, why=text))
    return StoreError(f"The catalog at {path} refused a write: {text}.")
