"""The real model behind the `real_llm` suite: llama.cpp's `llama-server` with
Qwen2.5-Coder-0.5B-Instruct, one slot on one thread, on a free port.

`make real-model` (tests/real_model_setup.py) builds and fetches both into the cache. Without
them the suite is skipped with the reason, except in CI (CI=true), where it fails: CI runs the
setup first, so missing files there are a broken setup, not a choice.

`real_server` yields a `RealServer`; `real_env` is the environment that points Zhixing at it
(the CLI helpers in tests/command.py take it as `env=`). `RealServer.usage()` counts the chat
calls (from the server's log: one slot launch per request) and tokens (from its /metrics) since a mark, so each
test records what it cost.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.browser import free_port
from tests.real_model_setup import binary_path, weights_path

MODEL = "qwen2.5-coder-0.5b-instruct"
# Measured here with -t 1: prompt 105-123 tokens/s, generation 18-27 tokens/s, ~700 MB resident.
SERVER_ARGS = ["-t", "1", "-c", "8192", "-np", "1", "--metrics", "--alias", MODEL]
START_TIMEOUT_S = 120  # loading 491 MB of weights takes ~5 s; a loaded machine, longer


@dataclass
class RealServer:
    url: str
    log: Path
    process: subprocess.Popen
    records: list[dict] = field(default_factory=list)

    def _metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as r:
            text = r.read().decode()
        found = re.findall(r"^llamacpp:(\w+) ([0-9.e+-]+)$", text, re.M)
        return {name: float(value) for name, value in found}

    def _calls(self) -> int:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        # One "launch_slot_" line per request the slot takes up (a re-sent one counts again); the
        # server logs no request lines at its default verbosity.
        return len(re.findall(r"launch_slot_", text))

    def mark(self) -> dict[str, float]:
        return {"calls": self._calls(), "time": time.monotonic(), **self._metrics()}

    def usage(self, since: dict[str, float]) -> dict[str, float]:
        now = self.mark()
        return {
            "calls": now["calls"] - since["calls"],
            "prompt_tokens": now.get("prompt_tokens_total", 0)
            - since.get("prompt_tokens_total", 0),
            "completion_tokens": now.get("tokens_predicted_total", 0)
            - since.get("tokens_predicted_total", 0),
            "wall_s": round(now["time"] - since["time"], 1),
        }


def missing() -> str | None:
    for what, path in (("llama-server", binary_path()), ("the model weights", weights_path())):
        if not path.is_file():
            return f"{what} is not at {path}; run `make real-model` to build and fetch it."
    return None


class ServerError(RuntimeError):
    """llama-server did not start; the sentence says where its log is."""


@contextlib.contextmanager
def serve(log: Path) -> Iterator[RealServer]:
    """llama-server with the model on a free port, healthy, stopped on exit."""
    port = free_port()
    args = [str(binary_path()), "-m", str(weights_path()), "--host", "127.0.0.1"]
    with log.open("w") as out:
        process = subprocess.Popen(
            [*args, "--port", str(port), *SERVER_ARGS], stdout=out, stderr=subprocess.STDOUT
        )
    server = RealServer(f"http://127.0.0.1:{port}", log, process)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise ServerError(f"llama-server exited with {process.returncode}; see {log}.")
            try:
                with urllib.request.urlopen(f"{server.url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServerError(
                    f"llama-server was not healthy in {START_TIMEOUT_S} s; see {log}."
                )
            time.sleep(0.5)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def environment(server: RealServer) -> dict[str, str]:
    """Zhixing pointed at the server, at its default concurrency (the issue: the default must
    work against a one-slot server)."""
    return {
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_API_KEY": "any",
        "ZHIXING_CHAT_MODEL": MODEL,
    }


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    reason = missing()
    if reason:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(reason)
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    try:
        with serve(log) as server:
            yield server
    except ServerError as exc:
        pytest.fail(str(exc))
    if server.records:
        record = tmp_path_factory.getbasetemp() / "real_llm_usage.json"
        record.write_text(json.dumps(server.records, indent=2), encoding="utf-8")
        print(f"\nreal_llm usage per test ({record}):")
        for r in server.records:
            print(json.dumps(r))


@pytest.fixture(scope="session")
def real_env(real_server: RealServer) -> dict[str, str]:
    return environment(real_server)


@pytest.fixture
def usage(real_server: RealServer, request: pytest.FixtureRequest) -> Iterator[None]:
    """Record the model's calls, tokens and wall time of one test."""
    since = real_server.mark()
    yield
    real_server.records.append({"test": request.node.name, **real_server.usage(since)})
