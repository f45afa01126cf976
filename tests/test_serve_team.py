"""`make serve-team` (cli/team.py): PostgreSQL, a Milvus server and the app start together,
print the line that joins them, keep what was written across a restart, and stop together.
Real processes: Debian's PostgreSQL, `milvus-lite server`, Streamlit."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser import free_port
from tests.command import ROOT, zx
from zhixing.cli.team import pg_binaries

pytestmark = [pytest.mark.process, pytest.mark.slow]


@pytest.fixture
def data() -> Iterator[Path]:
    """The set's data folder, under /tmp itself: when run as root PostgreSQL runs as `nobody`,
    who must be able to reach it (pytest's own tmp_path is owner-only)."""
    if pg_binaries() is None:
        message = "PostgreSQL is not installed: install Debian's `postgresql` package"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(message)
        pytest.skip(message)
    folder = Path(tempfile.mkdtemp(prefix="zhixing-team-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def team(
    data: Path, home: Path, ports: tuple[int, int, int]
) -> Iterator[tuple[str, dict[str, str]]]:
    """Start the set; yield the app's URL and the environment its first line exports."""
    app, milvus, pg = ports
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZHIXING_", "OPENAI_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "zhixing.cli.team", "--data", str(data), "--host", "127.0.0.1",
         "--port", str(app), "--milvus-port", str(milvus), "--pg-port", str(pg)],
        cwd=ROOT, env={**env, "ZHIXING_HOME": str(home)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "to join it: export " in first, first
        joined = dict(w.split("=", 1) for w in shlex.split(first.split("export ", 1)[1]))
        threading.Thread(target=process.stdout.read, daemon=True).start()  # the app's output
        url = f"http://127.0.0.1:{app}"
        _wait(lambda: _health(url), process, "the app")
        yield url, joined
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    assert process.returncode in (0, -signal.SIGTERM, 143)


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
            return reply.read().strip() == b"ok"
    except OSError:
        return False


def _wait(check, process: subprocess.Popen[str], what: str, timeout_s: float = 120) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not check():
        assert process.poll() is None, f"the set stopped before {what} answered"
        assert time.monotonic() < deadline, f"{what} did not answer"
        time.sleep(0.5)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return True
    except OSError:
        return False


def test_the_team_set_starts_joins_keeps_its_data_and_stops_together(
    data: Path, tmp_path: Path
) -> None:
    ports = (free_port(), free_port(), free_port())
    with team(data, tmp_path / "app-home", ports) as (url, joined):
        assert joined["ZHIXING_CATALOG_URI"].startswith("postgresql://")
        assert joined["ZHIXING_MILVUS_URI"] == f"http://127.0.0.1:{ports[1]}"
        # A command with another home joins the set through the printed line.
        zx(tmp_path / "cli-home", "kb", "create", "team-kb", env=joined)
        (tmp_path / "rule.md").write_text("# Rule\n\nKeys rotate every ninety days.\n")
        zx(tmp_path / "cli-home", "add", "team-kb", str(tmp_path / "rule.md"), env=joined)
        assert _health(url)
    # Stopped together: nothing of the set still listens.
    socket_file = data / "postgres" / f".s.PGSQL.{ports[2]}"
    assert not _listening(ports[0]) and not _listening(ports[1]) and not socket_file.exists()
    # Started again on the same data: what was built is there, from a third home.
    with team(data, tmp_path / "app-home", ports) as (_, joined):
        found = zx(tmp_path / "third-home", "search", "team-kb", "How often do keys rotate?",
                   env=joined)  # fmt: skip
        assert "rule.md" in found.stdout
