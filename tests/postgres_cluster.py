"""A throwaway PostgreSQL cluster for the tests (issue 38): `initdb` in a temp folder, the server
on a unix socket in that folder only (no TCP port to collide on), without fsync, stopped and
removed when the run ends. Each test gets a database of its own (`new_database`).

The server refuses to run as root, so a root run (a container, this machine) starts it as
`nobody` through subprocess's `user`/`group` (setuid before exec), the folder handed to it; an
ordinary user runs it as themself. Debian puts `initdb` and `pg_ctl` in
/usr/lib/postgresql/<major>/bin, not on PATH. Without them the Postgres tests skip with the
reason, except under CI=true, where they fail: CI installs Debian's `postgresql` (.ci/run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from zhixing.cli.team import pg_binaries, server_user

__all__ = ["Cluster", "cluster_or_skip"]

_SERVER = "-c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class Cluster:
    """A running cluster: a superuser `zhixing` that connects through the socket, no password."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def uri(self, database: str) -> str:
        return f"postgresql://zhixing@/{database}?host={self.folder}"

    def new_database(self) -> str:
        """A fresh, empty database; its URI."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.uri("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return self.uri(name)


@contextmanager
def running_cluster() -> Iterator[Cluster]:
    """Start a cluster in a new temp folder; stop it and remove the folder afterwards."""
    bin_dir = pg_binaries()
    if bin_dir is None:
        raise FileNotFoundError(
            "PostgreSQL is not installed (no initdb and pg_ctl on PATH or under"
            " /usr/lib/postgresql/*/bin): install Debian's `postgresql` package"
        )
    folder = Path(tempfile.mkdtemp(prefix="zhixing-pg-"))
    as_user = server_user(folder)
    data, log = folder / "data", folder / "server.log"
    try:
        _run([bin_dir / "initdb", "-D", data, "-U", "zhixing", "--auth=trust", "-E", "UTF8",
              "--no-locale", "--no-sync"], as_user)  # fmt: skip
        _run([bin_dir / "pg_ctl", "-D", data, "-l", log, "-w", "-o", f"-k {folder} {_SERVER}",
              "start"], as_user)  # fmt: skip
        try:
            yield Cluster(folder)
        finally:
            _run([bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], as_user)
    except subprocess.CalledProcessError as exc:
        server_log = log.read_text(errors="replace") if log.exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}{server_log}") from exc
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cluster_or_skip() -> Iterator[Cluster]:
    """The body of the session fixture: a cluster, or a skip (a failure under CI=true)."""
    try:
        with running_cluster() as cluster:
            yield cluster
    except FileNotFoundError as exc:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def _run(argv: list[Any], as_user: dict[str, Any]) -> None:
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": "/tmp"}
    subprocess.run(
        [str(a) for a in argv], check=True, capture_output=True, text=True, env=env, **as_user
    )
