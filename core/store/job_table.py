"""Build jobs in the catalog (docs/architecture.md §4): durable rows that say who builds which knowledge
base, so a second build is refused and a killed one is found and resumed.

A mixin of `Catalog`: the `jobs` table is in the catalog's schema, the methods live here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..choices import JobState
from ..errors import BuildBusyError

__all__ = ["ACTIVE_JOBS", "JobsMixin"]

ACTIVE_JOBS = tuple(s.value for s in JobState if s.active)  # running, paused


class JobsMixin:
    """The job methods of `Catalog`; they use its `transaction`, `_rows` and `_execute`."""

    # Provided by `Catalog` (declared for the type checker).
    transaction: Callable[[], AbstractContextManager[None]]
    _rows: Callable[[str, Sequence[Any]], list[dict[str, Any]]]
    _execute: Callable[[str, Sequence[Any]], sqlite3.Cursor]

    def claim_job(
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
        live process refuses (`BuildBusyError`, its job and pid: the caller words it), a running job whose process is
        gone becomes `interrupted`. `resume` (or an interrupted job with the same paths) is
        taken over instead of starting a new row.
        """
        marks = ",".join("?" * len(ACTIVE_JOBS))
        paths_json = json.dumps(list(paths), ensure_ascii=False)
        with self.transaction():
            for row in self._rows(
                f"SELECT id, pid, pid_started FROM jobs WHERE kb_id = ? AND status IN ({marks})",
                (kb_id, *ACTIVE_JOBS),
            ):
                if row["pid"] != owner[0] and alive(row["pid"], row["pid_started"]):
                    raise BuildBusyError(
                        f"Job {row['id']} of process {row['pid']} is building this knowledge base.",
                        job_id=row["id"],
                        pid=row["pid"],
                    )
                self._execute("UPDATE jobs SET status = 'interrupted' WHERE id = ?", (row["id"],))
            if resume is None:
                same = self._rows(
                    "SELECT id FROM jobs WHERE kb_id = ? AND status = 'interrupted' AND paths = ?"
                    " ORDER BY id DESC LIMIT 1",
                    (kb_id, paths_json),
                )
                resume = same[0]["id"] if same else None
            if resume is not None:
                self._execute(
                    "UPDATE jobs SET status = 'running', total = ?, pid = ?, pid_started = ?,"
                    " message = '', finished_at = NULL WHERE id = ?",
                    (total, owner[0], owner[1], resume),
                )
                return resume
            cursor = self._execute(
                "INSERT INTO jobs (kb_id, status, total, created_at, paths, staging, pid,"
                " pid_started) VALUES (?, 'running', ?, ?, ?, ?, ?, ?)",
                (kb_id, total, time.time(), paths_json, staging, owner[0], owner[1]),
            )
        return int(cursor.lastrowid or 0)

    def set_job_status(self, job_id: int, status: str, message: str = "") -> None:
        with self.transaction():
            self._execute(
                "UPDATE jobs SET status = ?, message = ? WHERE id = ?", (status, message, job_id)
            )

    def finish_job(
        self, job_id: int, *, status: str, done: int, failed: int, message: str = ""
    ) -> None:
        with self.transaction():
            self._execute(
                "UPDATE jobs SET status = ?, done = ?, failed = ?, message = ?, finished_at = ?"
                " WHERE id = ?",
                (status, done, failed, message, time.time(), job_id),
            )

    def interrupt_dead_jobs(self, alive: Callable[[int, str], bool]) -> None:
        """Mark running jobs whose process is gone as `interrupted` (a kill leaves them so)."""
        marks = ",".join("?" * len(ACTIVE_JOBS))
        with self.transaction():
            for row in self._rows(
                f"SELECT id, pid, pid_started FROM jobs WHERE status IN ({marks})", ACTIVE_JOBS
            ):
                if not alive(row["pid"], row["pid_started"]):
                    self._execute(
                        "UPDATE jobs SET status = 'interrupted' WHERE id = ?", (row["id"],)
                    )

    def jobs(self, kb_id: int | None = None, *, status: str | None = None) -> list[dict[str, Any]]:
        """Job rows, oldest first: of one knowledge base and/or in one status."""
        sql, params = "SELECT * FROM jobs WHERE 1 = 1", list[Any]()
        if kb_id is not None:
            sql += " AND kb_id = ?"
            params.append(kb_id)
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        return self._rows(sql + " ORDER BY id", params)
