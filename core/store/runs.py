"""The run log: every agentic `ask`, with its answer and its trace, kept in the catalog's SQLite.

The table lives in the catalog file but is created here, by its own `CREATE TABLE IF NOT EXISTS`,
so the catalog schema does not need to know about runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import NotFoundError
from core.store.catalog import Catalog

__all__ = ["RunStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    question TEXT NOT NULL,
    kbs TEXT NOT NULL DEFAULT '[]',
    answer TEXT NOT NULL DEFAULT '{}',
    trace TEXT NOT NULL DEFAULT '[]',
    started_at REAL NOT NULL,
    finished_at REAL
);
"""

_JSON_COLUMNS = ("kbs", "answer", "trace")


class RunStore:
    """Agentic runs stored in the catalog database: `save` one, `get` it back, list `recent`."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        with catalog.transaction():
            catalog.db.execute(_SCHEMA)

    def save(
        self,
        question: str,
        kbs: Sequence[str],
        answer: Mapping[str, Any],
        trace: Sequence[Mapping[str, Any]] | Mapping[str, Any],
        *,
        started_at: float,
        finished_at: float | None = None,
    ) -> int:
        """Store one run and return its id; `finished_at` defaults to now."""
        values = (
            question,
            json.dumps(list(kbs), ensure_ascii=False),
            json.dumps(answer, ensure_ascii=False),
            json.dumps(trace, ensure_ascii=False, default=str),
            started_at,
            time.time() if finished_at is None else finished_at,
        )
        with self.catalog.transaction():
            cursor = self.catalog.db.execute(
                "INSERT INTO runs (question, kbs, answer, trace, started_at, finished_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                values,
            )
            return int(cursor.lastrowid or 0)

    def get(self, run_id: int) -> dict[str, Any]:
        """Return one run with its JSON columns decoded; raise NotFoundError if there is none."""
        rows = self.catalog._rows("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise NotFoundError(f"There is no run {run_id}; `recent()` lists the stored runs.")
        return _decoded(rows[0])

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest runs, newest first."""
        rows = self.catalog._rows("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        return [_decoded(row) for row in rows]

    def since(self, after_id: int = 0, limit: int = 50) -> list[dict[str, Any]]:
        """The latest `limit` runs after run `after_id`, oldest first (a conversation, in order)."""
        rows = self.catalog._rows(
            "SELECT * FROM (SELECT * FROM runs WHERE id > ? ORDER BY id DESC LIMIT ?) ORDER BY id",
            (after_id, limit),
        )
        return [_decoded(row) for row in rows]

    def mark(self, name: str) -> int:
        """Set the named marker to the latest run id (e.g. where a new conversation starts)."""
        with self.catalog.transaction():
            self.catalog.db.execute(_MARKS_SCHEMA)
            self.catalog.db.execute(
                "INSERT OR REPLACE INTO run_marks (name, run_id)"
                " VALUES (?, (SELECT COALESCE(MAX(id), 0) FROM runs))",
                (name,),
            )
        return self.marker(name)

    def marker(self, name: str) -> int:
        """The run id the named marker points at; 0 when it was never set."""
        with self.catalog.transaction():
            self.catalog.db.execute(_MARKS_SCHEMA)
        rows = self.catalog._rows("SELECT run_id FROM run_marks WHERE name = ?", (name,))
        return int(rows[0]["run_id"]) if rows else 0


# Named positions in the run log (the agent page's "new conversation"), created on first use.
_MARKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_marks (
    name TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL
);
"""


def _decoded(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: json.loads(v) if k in _JSON_COLUMNS else v for k, v in row.items()}
