"""The agents' checkpointer (docs/architecture.md §6): conversations' threads in one SQLite file,
or, when the catalog is on PostgreSQL, in the catalog's database, where every process of a
team's home sees every conversation.

Only the project's own state classes are revived from a checkpoint, so a tampered file or
database cannot make LangGraph import arbitrary code. `copy_checkpoints` moves every thread
from one checkpointer to another through LangGraph's own saver API, so a backup's
`conversations.sqlite` member stays one format whichever database the threads live in.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from ..answer import Answer, Citation
from ..ask.state import Evidence, Query
from ..errors import StoreError
from ..models import Hit
from ..search.rewrite import QueryRewrites
from ..task.state import Finding, KnowledgeRef, Subtask, SubtaskOutcome

__all__ = ["Checkpointer", "close_checkpointer", "copy_checkpoints", "open_checkpointer"]

Checkpointer = BaseCheckpointSaver[str]  # SqliteSaver or PostgresSaver: thread ids are strings
# How long opening waits for the Postgres server before it says so (a refused port fails at once).
_CONNECT_TIMEOUT_S = 10.0


def open_checkpointer(target: Path | str) -> Checkpointer:
    """The agents' checkpointer: over a SQLite file (`target` a path; created with its tables on
    first use), or over a PostgreSQL database (`target` its `postgresql://` URI)."""
    if isinstance(target, str):
        return _postgres(target)
    path = target
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The saver serialises its own use of the connection with a lock (LangGraph's docs).
        saver = SqliteSaver(sqlite3.connect(str(path), check_same_thread=False), serde=_serde())
        saver.setup()
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(
            f"The conversations file {path} cannot be opened ({exc}); make the Zhixing home"
            " writable, or set ZHIXING_HOME to a folder Zhixing may write."
        ) from exc
    return saver


def close_checkpointer(saver: Checkpointer) -> None:
    """Close what the checkpointer holds: the SQLite connection, or the Postgres pool."""
    saver.conn.close()  # type: ignore[attr-defined]  # both savers keep theirs as `conn`


def copy_checkpoints(source: Checkpointer, target: Checkpointer) -> int:
    """Copy every thread's checkpoints and pending writes from `source` into `target`, oldest
    first, through the savers' own `list`/`put`/`put_writes`; return how many checkpoints."""
    copied = list(source.list(None))
    for item in reversed(copied):  # `list` is newest first; a parent goes in before its child
        _put(target, item)
    return len(copied)


def _put(target: Checkpointer, item: CheckpointTuple) -> None:
    configurable = item.config["configurable"]
    parent = item.parent_config or {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        }
    }
    checkpoint = item.checkpoint
    # Every channel counts as new: a saver that keeps values apart (Postgres's blobs) stores
    # each one the checkpoint holds, so the copy reads back whole.
    target.put(parent, checkpoint, item.metadata, dict(checkpoint["channel_versions"]))
    writes: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in item.pending_writes or ():
        writes[task_id].append((channel, value))
    for task_id, pending in writes.items():
        target.put_writes(item.config, pending, task_id)


def _serde() -> JsonPlusSerializer:
    known = (Answer, Citation, Evidence, Finding, Hit, KnowledgeRef, Query, QueryRewrites)
    return JsonPlusSerializer(allowed_msgpack_modules=(*known, Subtask, SubtaskOutcome))


def _postgres(uri: str) -> Checkpointer:
    """A PostgresSaver over a pool of the catalog's database (store/postgres.py `open_pool`
    makes its connections as LangGraph's docs require). The saver takes its own lock around
    each use of a connection, so the app's sessions, threads of one process, share it."""
    from langgraph.checkpoint.postgres import PostgresSaver

    from ..store.dialect import driver_errors
    from ..store.postgres import open_pool, redacted

    pool = open_pool(uri, timeout_s=_CONNECT_TIMEOUT_S)
    try:
        saver = PostgresSaver(pool, serde=_serde())
        saver.setup()
    except driver_errors() as exc:
        pool.close()
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
        raise StoreError(
            f"The conversations' tables in {redacted(uri)} cannot be made: {reason}; give the"
            " ZHIXING_CATALOG_URI user the right to create tables in its database."
        ) from exc
    return saver
