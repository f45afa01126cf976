"""Build jobs (docs/architecture.md §4): durable rows that say who builds which knowledge base, so a
second build is refused and a killed one is found and resumed.

The `jobs` table sits in the catalog's file beside the knowledge bases it refers to; `Catalog`
opens this store with it (`catalog.jobs`), and deleting a knowledge base deletes its jobs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..choices import JobState
from ..errors import BuildBusyError
from .dialect import SqlDatabase

__all__ = ["ACTIVE_JOBS", "JobStore"]

ACTIVE_JOBS = tuple(s.value for s in JobState if s.active)  # running, paused

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id {rowid},
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    total INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    created_at {real} NOT NULL,
    finished_at {real},
    paths TEXT NOT NULL DEFAULT '[]',
    staging TEXT NOT NULL DEFAULT '',
    pid INTEGER NOT NULL DEFAULT 0,
    pid_started TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT ''
);
"""

# Columns added to `jobs` since the first catalogs: (name, declaration) for ALTER TABLE.
_ADDED = (
    ("paths", "TEXT NOT NULL DEFAULT '[]'"),
    ("staging", "TEXT NOT NULL DEFAULT ''"),
    ("pid", "INTEGER NOT NULL DEFAULT 0"),
    ("pid_started", "TEXT NOT NULL DEFAULT ''"),
    ("message", "TEXT NOT NULL DEFAULT ''"),
)


class JobStore:
    """The `jobs` table. Job rows are dicts of its columns."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        db.executescript(db.dialect.ddl(_SCHEMA))
        have = db.columns("jobs")
        for name, declaration in _ADDED:  # jobs before they were durable: not resumable
            if name not in have:
                db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {declaration}")

    def claim(
        self,
        kb_id: int,
        *,
        total: int,
        paths: Sequence[str],
        staging: str,
        owner: tuple[int, str],
        alive: Callable[[int, str], bool],
        resume: int | None = None,
    ) -> int:
        """Record that `owner` (pid, start time) builds a knowledge base; return the job id.

        In one write transaction, so two processes cannot both claim: a running job of another
        live process refuses (`BuildBusyError`, its job and pid: the caller words it), a running
        job whose process is gone becomes `interrupted`. `resume` (or an interrupted job with
        the same paths) is taken over instead of starting a new row.
        """
        marks = ",".join("?" * len(ACTIVE_JOBS))
        paths_json = json.dumps(list(paths), ensure_ascii=False)
        with self.db.transaction():
            for row in self.db.rows(
                f"SELECT id, pid, pid_started FROM jobs WHERE kb_id = ? AND status IN ({marks})",
                (kb_id, *ACTIVE_JOBS),
            ):
                if row["pid"] != owner[0] and alive(row["pid"], row["pid_started"]):
                    raise BuildBusyError(
                        f"Job {row['id']} of process {row['pid']} is building this knowledge base.",
                        job_id=row["id"],
                        pid=row["pid"],
                    )
                self.db.execute("UPDATE jobs SET status = 'interrupted' WHERE id = ?", (row["id"],))
            if resume is None:
                same = self.db.rows(
                    "SELECT id FROM jobs WHERE kb_id = ? AND status = 'interrupted' AND paths = ?"
                    " ORDER BY id DESC LIMIT 1",
                    (kb_id, paths_json),
                )
                resume = same[0]["id"] if same else None
            if resume is not None:
                self.db.execute(
                    "UPDATE jobs SET status = 'running', total = ?, pid = ?, pid_started = ?,"
                    " message = '', finished_at = NULL WHERE id = ?",
                    (total, owner[0], owner[1], resume),
                )
                return resume
            [row] = self.db.rows(
                "INSERT INTO jobs (kb_id, status, total, created_at, paths, staging, pid,"
                " pid_started) VALUES (?, 'running', ?, ?, ?, ?, ?, ?) RETURNING id",
                (kb_id, total, time.time(), paths_json, staging, owner[0], owner[1]),
            )
        return int(row["id"])

    def set_status(self, job_id: int, status: str, message: str = "") -> None:
        with self.db.transaction():
            self.db.execute(
                "UPDATE jobs SET status = ?, message = ? WHERE id = ?", (status, message, job_id)
            )

    def finish(
        self, job_id: int, *, status: str, done: int, failed: int, message: str = ""
    ) -> None:
        with self.db.transaction():
            self.db.execute(
                "UPDATE jobs SET status = ?, done = ?, failed = ?, message = ?, finished_at = ?"
                " WHERE id = ?",
                (status, done, failed, message, time.time(), job_id),
            )

    def interrupt_dead(self, alive: Callable[[int, str], bool]) -> None:
        """Mark running jobs whose process is gone as `interrupted` (a kill leaves them so)."""
        marks = ",".join("?" * len(ACTIVE_JOBS))
        with self.db.transaction():
            for row in self.db.rows(
                f"SELECT id, pid, pid_started FROM jobs WHERE status IN ({marks})", ACTIVE_JOBS
            ):
                if not alive(row["pid"], row["pid_started"]):
                    self.db.execute(
                        "UPDATE jobs SET status = 'interrupted' WHERE id = ?", (row["id"],)
                    )

    def all(self, kb_id: int | None = None, *, status: str | None = None) -> list[dict[str, Any]]:
        """Job rows, oldest first: of one knowledge base and/or in one status."""
        sql, params = "SELECT * FROM jobs WHERE 1 = 1", list[Any]()
        if kb_id is not None:
            sql += " AND kb_id = ?"
            params.append(kb_id)
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        return self.db.rows(sql + " ORDER BY id", params)
