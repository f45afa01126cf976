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


def _decoded(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: json.loads(v) if k in _JSON_COLUMNS else v for k, v in row.items()}
