"""A home's catalog and conversations moved from one database to another (docs/architecture.md
§9 `backup` / `restore`): a Postgres catalog into the SQLite members a backup holds, and a
restored catalog into an empty PostgreSQL database, so one backup format serves both engines
and a home moves from `catalog.db` to a team's server by a backup and a restore.

The rows move with core/store/table_copy.py (every table, one snapshot, one transaction), the
threads with the checkpointers' own API (core/agents/checkpoints.py). Before a restore writes
into a database, `empty_database` checks it holds no table and notes what it holds;
`undo_restore` drops what the restore made there, so a failed restore leaves it as it was.
"""

from __future__ import annotations

from pathlib import Path

from ..agents.checkpoints import close_checkpointer, copy_checkpoints, open_checkpointer
from ..errors import StoreError
from ..llm.cache import LLMCache
from ..store import Catalog
from ..store.catalog import open_database
from ..store.graph import GraphStore
from ..store.notebooks import NotebookStore
from ..store.runs import RunStore
from ..store.table_copy import copy_tables
from ..store.users import UserStore

__all__ = [
    "copy_catalog",
    "copy_conversations",
    "empty_database",
    "open_catalog",
    "undo_restore",
]

Objects = set[tuple[str, str]]  # a Postgres schema's tables and functions, (kind, name)


def open_catalog(target: Path | str) -> Catalog:
    """The catalog at `target` with every store's tables made or brought up to date, as the
    service opens them (the catalog, users, graph, run log, notebooks, LLM cache)."""
    catalog = Catalog(target)
    try:
        for store in (UserStore, GraphStore, RunStore, NotebookStore, LLMCache):
            store(catalog.db)
    except BaseException:
        catalog.close()
        raise
    return catalog


def copy_catalog(source: Path | str, target: Path | str) -> dict[str, int]:
    """Copy every table of the catalog at `source` into the catalog at `target`, whose tables
    are made first; return the rows copied per table. The source is only read."""
    db = open_database(source)
    try:
        catalog = open_catalog(target)
        try:
            return copy_tables(db, catalog.db)
        finally:
            catalog.close()
    finally:
        db.close()


def copy_conversations(source: Path | str, target: Path | str) -> int:
    """Copy every conversation's checkpoints from the checkpointer at `source` (a SQLite file
    or a Postgres URI) to the one at `target`; return how many checkpoints."""
    reader = open_checkpointer(source)
    try:
        writer = open_checkpointer(target)
        try:
            return copy_checkpoints(reader, writer)
        finally:
            close_checkpointer(writer)
    finally:
        close_checkpointer(reader)


def empty_database(uri: str) -> Objects:
    """What the Postgres database at `uri` holds (its functions); StoreError, in one sentence,
    when it holds a table: a restore writes only into an empty database."""
    from ..store.postgres import redacted, schema_objects

    objects = schema_objects(uri)
    if any(kind == "table" for kind, _ in objects):
        raise StoreError(
            f"The database at {redacted(uri)} already holds tables; restore into an empty"
            " database (CREATE DATABASE a new one), never over one that holds data."
        )
    return objects


def undo_restore(uri: str, before: Objects) -> None:
    """Drop what a failed restore made in the database at `uri`, which held `before`."""
    from ..store.postgres import drop_objects, schema_objects

    drop_objects(uri, schema_objects(uri) - before)
