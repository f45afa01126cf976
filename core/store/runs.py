"""The run log and the conversations: every `ask` and task run, with its answer (or report) and
its trace, each owned by the user who asked and filed under one of that user's conversations.

Kept in the catalog's SQLite, created here by its own `CREATE TABLE IF NOT EXISTS` (so the
catalog schema does not need to know about runs). A conversation is also a LangGraph thread:
its id is the `thread_id` under which the agents' checkpointer keeps the graph's memory
(core/agents/memory.py). Runs stored before conversations existed belong to the local operator
and to no conversation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import NotFoundError
from ..models import Conversation
from .dialect import SqlDatabase

__all__ = ["RunStore", "StoredRun"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id {id},
    question TEXT NOT NULL,
    kbs TEXT NOT NULL DEFAULT '[]',
    answer TEXT NOT NULL DEFAULT '{}',
    trace TEXT NOT NULL DEFAULT '[]',
    started_at {real} NOT NULL,
    finished_at {real}
);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (owner, updated_at);
"""
# Columns added to `runs` after its first release (ALTER TABLE on an older catalog).
_ADDED = {
    "owner": "TEXT NOT NULL DEFAULT 'local'",
    "conversation": "TEXT",
    "kind": "TEXT NOT NULL DEFAULT 'ask'",
}
_TITLE_CHARS = 60


@dataclass(frozen=True)
class StoredRun:
    """One run as the log keeps it: a question (`answer` is `Answer.to_json()`) or a task
    (`TaskResult.to_json()`), with its trace events."""

    id: int
    kind: Literal["ask", "task"]
    question: str
    kbs: tuple[str, ...]
    answer: dict[str, Any]
    trace: list[dict[str, Any]]
    started_at: float
    finished_at: float | None
    owner: str  # the user who asked ("local" for the operator)
    conversation: str | None  # the conversation it is filed under, if any


class RunStore:
    """Runs and conversations in the home's database. The store checks no rights: the
    service passes the owner it has checked, and filters what a user may read."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        with db.transaction():
            db.executescript(db.dialect.ddl(_SCHEMA))
            have = db.columns("runs")
            for column, kind in _ADDED.items():
                if column not in have:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
            db.execute("CREATE INDEX IF NOT EXISTS runs_conversation ON runs (conversation, id)")

    # --- conversations ----------------------------------------------------------------------

    def new_conversation(self, owner: str, title: str = "") -> Conversation:
        now = time.time()
        conversation = Conversation(uuid.uuid4().hex, owner, _title(title), now, now, 0)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO conversations (id, owner, title, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (conversation.id, owner, conversation.title, now, now),
            )
        return conversation

    def conversation(self, conversation_id: str, owner: str) -> Conversation:
        """The owner's conversation; another user's reads as missing, never as forbidden."""
        rows = self.db.rows(
            _CONVERSATIONS + " WHERE c.id = ? AND c.owner = ? GROUP BY c.id",
            (conversation_id, owner),
        )
        if not rows:
            raise NotFoundError(
                "There is no such conversation; start a new one or pick one from the list."
            )
        return _conversation(rows[0])

    def conversations(self, owner: str, limit: int = 30) -> list[Conversation]:
        """The owner's conversations, the latest first."""
        rows = self.db.rows(
            _CONVERSATIONS + " WHERE c.owner = ? GROUP BY c.id ORDER BY c.updated_at DESC LIMIT ?",
            (owner, limit),
        )
        return [_conversation(r) for r in rows]

    # --- runs -------------------------------------------------------------------------------

    def save(
        self,
        question: str,
        kbs: Sequence[str],
        answer: Mapping[str, Any],
        trace: Sequence[Mapping[str, Any]] | Mapping[str, Any],
        *,
        started_at: float,
        finished_at: float | None = None,
        owner: str = "local",
        conversation: str | None = None,
        kind: str = "ask",
    ) -> int:
        """Store one run and return its id; `finished_at` defaults to now. A run filed under a
        conversation moves it to the top of its owner's list (and names it, if it has no name)."""
        finished = time.time() if finished_at is None else finished_at
        values = (
            question,
            json.dumps(list(kbs), ensure_ascii=False),
            json.dumps(answer, ensure_ascii=False),
            json.dumps(trace, ensure_ascii=False, default=str),
            started_at,
            finished,
            owner,
            conversation,
            kind,
        )
        with self.db.transaction():
            [row] = self.db.rows(
                "INSERT INTO runs (question, kbs, answer, trace, started_at, finished_at,"
                " owner, conversation, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                values,
            )
            if conversation is not None:
                self.db.execute(
                    "UPDATE conversations SET updated_at = ?,"
                    " title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
                    (finished, _title(question), conversation),
                )
            return int(row["id"])

    def get(self, run_id: int) -> StoredRun:
        """Return one run with its JSON columns decoded; raise NotFoundError if there is none."""
        rows = self.db.rows("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise NotFoundError(f"There is no run {run_id}; `recent()` lists the stored runs.")
        return _run(rows[0])

    def recent(self, limit: int = 20, *, owner: str | None = None) -> list[StoredRun]:
        """The latest runs (of one owner, or everyone's), newest first."""
        where, params = ("WHERE owner = ?", (owner,)) if owner is not None else ("", ())
        rows = self.db.rows(
            f"SELECT * FROM runs {where} ORDER BY id DESC LIMIT ?", (*params, limit)
        )
        return [_run(row) for row in rows]

    def turns(self, conversation_id: str, limit: int = 50) -> list[StoredRun]:
        """The latest `limit` runs of a conversation, oldest first (the conversation, in order)."""
        rows = self.db.rows(
            "SELECT * FROM (SELECT * FROM runs WHERE conversation = ? ORDER BY id DESC LIMIT ?)"
            " AS latest ORDER BY id",
            (conversation_id, limit),
        )
        return [_run(row) for row in rows]


_CONVERSATIONS = (
    "SELECT c.*, COUNT(r.id) AS turns FROM conversations c"
    " LEFT JOIN runs r ON r.conversation = c.id"
)


def _title(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1] + "…"


def _conversation(row: Mapping[str, Any]) -> Conversation:
    return Conversation(
        id=row["id"],
        owner=row["owner"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        turns=int(row["turns"] or 0),
    )


def _run(row: Mapping[str, Any]) -> StoredRun:
    kind: Literal["ask", "task"] = "task" if row["kind"] == "task" else "ask"
    return StoredRun(
        id=row["id"],
        kind=kind,
        question=row["question"],
        kbs=tuple(json.loads(row["kbs"])),
        answer=json.loads(row["answer"]),
        trace=json.loads(row["trace"]),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        owner=row["owner"],
        conversation=row["conversation"],
    )
