"""`zhixing serve` (docs/architecture.md §10): refuses a shared address without logins, starts with them;
the safe defaults of .streamlit/config.toml; and no trace ever leaves the machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import tomllib
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.command import zx

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    return {**env, "ZHIXING_HOME": str(home), **extra}


def _serve(home: Path, host: str, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "zhixing.cli.main", "serve", "--host", host, "--port", str(port)],
        cwd=ROOT,
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _healthy(port: int, timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                return r.read() == b"ok"
        except OSError:
            time.sleep(0.5)
    return False


@pytest.mark.process
def test_serving_beyond_localhost_without_users_is_refused_with_the_way_out(tmp_path):
    proc = _serve(tmp_path / "home", "0.0.0.0", _free_port())
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "needs logins" in err and "zhixing user add NAME --role admin" in err


@pytest.mark.process
@pytest.mark.slow
def test_serve_starts_with_a_user_and_requires_logins(tmp_path):
    home = tmp_path / "home"
    added = subprocess.run(
        [sys.executable, "-m", "zhixing.cli.main", "user", "add", "ada", "--role", "admin"]
        + ["--password-stdin"],
        cwd=ROOT,
        env=_env(home),
        input="ada-password\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0, added.stderr
    port = _free_port()
    proc = _serve(home, "0.0.0.0", port)
    try:
        assert _healthy(port), "the server did not answer its health check"
        # `serve` execs Streamlit in its own process, telling the app that logins are required.
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        assert b"ZHIXING_AUTH=required" in environ
        assert f"ZHIXING_HOME={home.resolve()}".encode() in environ
    finally:
        proc.kill()
        proc.wait()


def test_the_streamlit_config_carries_safe_defaults():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    server = config["server"]
    assert server["address"] == "localhost"  # `make run` is local; `serve` is the way out
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert server["maxUploadSize"] == 200 and server["enableStaticServing"] is False
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["showErrorDetails"] == "none"


class _Collector(BaseHTTPRequestHandler):
    """A stand-in LangSmith endpoint: it records every request it gets."""

    seen: list[str] = []
    bodies: list[bytes] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass

    def _record(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        type(self).bodies.append(self.rfile.read(length))
        type(self).seen.append(f"{self.command} {self.path}")
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PATCH = _record  # noqa: N815 - stdlib names


_TRACED = textwrap.dedent(
    """
    import sys
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tracers.langchain import wait_for_all_tracers
    if sys.argv[1] == "zhixing":
        from zhixing.core.config import Settings
        from zhixing.core.service import KnowledgeService
        svc = KnowledgeService(Settings.from_env())
        svc.kbs.create("kb")
        svc.search.ask("What is traced?", ["kb"], max_rounds=1)
        svc.close()
    RunnableLambda(lambda x: x + 1).invoke(1)
    wait_for_all_tracers()
    """
)


def _traced(mode: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _TRACED, mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.process
@pytest.mark.slow
def test_no_trace_leaves_the_machine_even_when_the_environment_asks_for_one(tmp_path):
    _Collector.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tracing = {
        "LANGCHAIN_TRACING_V2": "true",
        "LANGSMITH_TRACING": "true",
        "LANGSMITH_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
        "LANGCHAIN_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
        "LANGSMITH_API_KEY": "lsv2-test-key",
    }
    try:
        # Without Zhixing the same environment does send traces: the collector works.
        _traced("plain", _env(tmp_path / "plain", **tracing))
        assert _Collector.seen, "the stand-in LangSmith endpoint received nothing"
        _Collector.seen = []
        _traced("zhixing", _env(tmp_path / "home", **tracing))
        assert _Collector.seen == []
        # Zhixing's own switch turns it on, into the project it names.
        opted = {**tracing, "ZHIXING_LANGSMITH_TRACING": "true"}
        _traced("zhixing", _env(tmp_path / "opted", **opted, ZHIXING_LANGSMITH_PROJECT="kb-trace"))
        assert any(seen.startswith("POST") for seen in _Collector.seen)
        sent = b"".join(_Collector.bodies)
        assert b"What is traced?" in sent and b"kb-trace" in sent
    finally:
        server.shutdown()


def test_users_can_be_listed_and_removed_from_the_cli(tmp_path):
    home = tmp_path / "home"
    zx(home, "user", "add", "sso@corp", "--role", "viewer", "--oidc")
    listed = json.loads(zx(home, "user", "list", "--json").stdout)
    assert [(u["name"], u["role"], u["password"]) for u in listed] == [
        ("sso@corp", "viewer", False)
    ]
    zx(home, "user", "remove", "sso@corp")
    assert json.loads(zx(home, "user", "list", "--json").stdout) == []
    audit = json.loads(zx(home, "audit", "--json").stdout)
    assert [(e["user"], e["action"], e["target"]) for e in audit] == [
        ("local", "user.remove", "sso@corp"),
        ("local", "user.add", "sso@corp"),
    ]


def test_serve_refuses_a_milvus_uri_that_is_not_a_server_or_does_not_answer(tmp_path):
    home = tmp_path / "home"
    path = zx(home, "serve", "--milvus-uri", "vectors.db", check=False)
    assert path.returncode == 1 and "takes a server address such as http://" in path.stderr
    # The port stays bound (and refuses connections) for the whole call: a port that was free a
    # moment ago may be a Milvus server by now (another test worker's), and a `serve` that finds
    # one execs Streamlit in place of this test process.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        down = zx(home, "serve", "--milvus-uri", f"http://127.0.0.1:{port}", check=False)
    assert down.returncode == 1 and "Milvus server at http://127.0.0.1:" in down.stderr
    assert down.stderr.count("\n") == 1  # one sentence, no traceback
