"""Build jobs (docs/architecture.md §4): durable rows that say who builds which knowledge base, so a
second build is refused and a killed one is found and resumed — by any process on the catalog.

The `jobs` table sits in the catalog beside the knowledge bases it refers to; `Catalog` opens
this store with it (`catalog.jobs`), and deleting a knowledge base deletes its jobs. The process
that runs a job writes its progress and a heartbeat into the row every few seconds (`beat`) and
reads back whether another process asked it to stop (`request_cancel`), so every app instance and
command on one catalog sees, and may cancel, every build. On a shared catalog (PostgreSQL) a
build's staged uploads are kept in `staged_files` too, so another machine can resume it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..choices import JobState
from ..errors import BuildBusyError
from .dialect import SqlDatabase

__all__ = ["ACTIVE_JOBS", "JobStore"]

ACTIVE_JOBS = tuple(s.value for s in JobState if s.active)  # running, paused

# Whether a job row's process still runs it (core/build/durable.py `owner_alive`): given the row.
Alive = Callable[[Mapping[str, Any]], bool]
# (pid, its start time, its host): the process that claims a job.
Owner = tuple[int, str, str]

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
    message TEXT NOT NULL DEFAULT '',
    host TEXT NOT NULL DEFAULT '',
    heartbeat {real} NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    stage TEXT NOT NULL DEFAULT '',
    progress {real} NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    embedded INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS staged_files (
    folder TEXT NOT NULL,
    name TEXT NOT NULL,
    content {blob} NOT NULL,
    PRIMARY KEY (folder, name)
);
"""

# Columns added to `jobs` since the first catalogs: (name, declaration) for ALTER TABLE.
_ADDED = (
    ("paths", "TEXT NOT NULL DEFAULT '[]'"),
    ("staging", "TEXT NOT NULL DEFAULT ''"),
    ("pid", "INTEGER NOT NULL DEFAULT 0"),
    ("pid_started", "TEXT NOT NULL DEFAULT ''"),
    ("message", "TEXT NOT NULL DEFAULT ''"),
    ("host", "TEXT NOT NULL DEFAULT ''"),
    ("heartbeat", "{real} NOT NULL DEFAULT 0"),
    ("cancel_requested", "INTEGER NOT NULL DEFAULT 0"),
    ("stage", "TEXT NOT NULL DEFAULT ''"),
    ("progress", "{real} NOT NULL DEFAULT 0"),
    ("chunks", "INTEGER NOT NULL DEFAULT 0"),
    ("embedded", "INTEGER NOT NULL DEFAULT 0"),
    ("queued", "INTEGER NOT NULL DEFAULT 0"),
)
_OWNER = "id, pid, pid_started, host, heartbeat"  # what `Alive` reads of a row


class JobStore:
    """The `jobs` table. Job rows are dicts of its columns."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        db.executescript(db.dialect.ddl(_SCHEMA))
        have = db.columns("jobs")
        for name, declaration in _ADDED:  # jobs before they were durable: not resumable
            if name not in have:
                db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {db.dialect.ddl(declaration)}")

    def claim(
        self,
        kb_id: int,
        *,
        total: int,
        paths: Sequence[str],
        staging: str,
        owner: Owner,
        alive: Alive,
        resume: int | None = None,
    ) -> int:
        """Record that `owner` (pid, start time, host) builds a knowledge base; return the job id.

        In one write transaction, so two processes cannot both claim: a running job of another
        live process refuses (`BuildBusyError`, its job and pid: the caller words it), a running
        job whose process is gone becomes `interrupted`. `resume` (or an interrupted job with
        the same paths) is taken over instead of starting a new row, with this claim's paths and
        staging (another machine's resume reads the uploads from its own home).
        """
        marks = ",".join("?" * len(ACTIVE_JOBS))
        paths_json = json.dumps(list(paths), ensure_ascii=False)
        with self.db.transaction():
            for row in self.db.rows(
                f"SELECT {_OWNER} FROM jobs WHERE kb_id = ? AND status IN ({marks})",
                (kb_id, *ACTIVE_JOBS),
            ):
                mine = (row["pid"], row["host"]) == (owner[0], owner[2])
                if not mine and alive(row):
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
            now = time.time()
            if resume is not None:
                self.db.execute(
                    "UPDATE jobs SET status = 'running', total = ?, pid = ?, pid_started = ?,"
                    " host = ?, heartbeat = ?, cancel_requested = 0, paths = ?, staging = ?,"
                    " message = '', finished_at = NULL WHERE id = ?",
                    (total, *owner, now, paths_json, staging, resume),
                )
                return resume
            [row] = self.db.rows(
                "INSERT INTO jobs (kb_id, status, total, created_at, paths, staging, pid,"
                " pid_started, host, heartbeat) VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (kb_id, total, now, paths_json, staging, *owner, now),
            )
        return int(row["id"])

    def beat(
        self,
        job_id: int,
        *,
        done: int,
        total: int,
        stage: str,
        progress: float,
        chunks: int,
        embedded: int = 0,
        queued: int = 0,
    ) -> bool:
        """Write a running job's progress and heartbeat; return whether a cancel was asked."""
        with self.db.transaction():
            self.db.execute(
                "UPDATE jobs SET done = ?, total = ?, stage = ?, progress = ?, chunks = ?,"
                " embedded = ?, queued = ?, heartbeat = ? WHERE id = ?",
                (done, total, stage, progress, chunks, embedded, queued, time.time(), job_id),
            )
            rows = self.db.rows("SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,))
        return bool(rows and rows[0]["cancel_requested"])

    def request_cancel(self, job_id: int) -> bool:
        """Ask the process that runs a job to stop it (it reads this at its next `beat`);
        return whether the job was at work."""
        marks = ",".join("?" * len(ACTIVE_JOBS))
        with self.db.transaction():
            written = self.db.execute(
                f"UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND status IN ({marks})",
                (job_id, *ACTIVE_JOBS),
            )
        return written.rowcount > 0

    def get(self, job_id: int) -> dict[str, Any] | None:
        rows = self.db.rows("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return rows[0] if rows else None

    def keep_staged(self, folder: str, files: Sequence[tuple[str, bytes]]) -> None:
        """Keep a build's staged uploads (name relative to its folder, content) in the catalog,
        for a resume on a machine that does not have the folder."""
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO staged_files (folder, name, content) VALUES (?, ?, ?)"
                " ON CONFLICT (folder, name) DO NOTHING",
                [(folder, name, content) for name, content in files],
            )

    def staged(self, folder: str) -> list[tuple[str, bytes]]:
        rows = self.db.rows(
            "SELECT name, content FROM staged_files WHERE folder = ? ORDER BY name", (folder,)
        )
        return [(row["name"], bytes(row["content"])) for row in rows]

    def drop_staged(self, folder: str) -> None:
        with self.db.transaction():
            self.db.execute("DELETE FROM staged_files WHERE folder = ?", (folder,))

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

    def interrupt_dead(self, alive: Alive) -> None:
        """Mark running jobs whose process is gone as `interrupted` (a kill leaves them so)."""
        marks = ",".join("?" * len(ACTIVE_JOBS))
        with self.db.transaction():
            for row in self.db.rows(
                f"SELECT {_OWNER} FROM jobs WHERE status IN ({marks})", ACTIVE_JOBS
            ):
                if not alive(row):
                    self.db.execute(
                        "UPDATE jobs SET status = 'interrupted' WHERE id = ?", (row["id"],)
                    )

    def unfinished(self) -> list[dict[str, Any]]:
        """The rows of jobs at work or interrupted, oldest first (what every process shows)."""
        states = (*ACTIVE_JOBS, JobState.INTERRUPTED.value)
        marks = ",".join("?" * len(states))
        return self.db.rows(f"SELECT * FROM jobs WHERE status IN ({marks}) ORDER BY id", states)

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
