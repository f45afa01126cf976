"""`zhixing health` (core/health.py): a real catalog and a real Milvus Lite in a temp home, a
real HTTP fake of the OpenAI API, a dead port, and a second process holding the Milvus Lite
file as the running app does."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.command import zhixing_process, zx
from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.errors import ConfigError
from zhixing.core.health import Status, check_health
from zhixing.core.store import VectorStore

KEY = "sk-health-probe-secret-0123456789"


def _home(where: Path) -> Path:
    """A home as the app leaves it: a catalog with its tables and a Milvus Lite file."""
    home = where / "home"
    zx(home, "kb", "create", "notes")
    return home


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return _home(tmp_path)


@pytest.fixture
def holder(home: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process with the home's Milvus Lite file open, as the serving app has it."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pymilvus import MilvusClient; MilvusClient(sys.argv[1]);"
            " print('ready', flush=True); time.sleep(120)",
            str(home / "milvus.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_home_with_an_answering_endpoint_is_healthy_in_every_part(home: Path) -> None:
    with FakeOpenAI(model="qwen2.5") as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key=KEY)
        health = check_health(settings, skip=())
        asked = fake.bodies("/v1/models")
    assert health.healthy
    statuses = {c.part: c.status for c in health.checks}
    assert statuses == {"catalog": Status.OK, "vectors": Status.OK, "llm": Status.OK}
    llm = health.checks[2]
    assert "lists 1 model(s)" in llm.message and "gpt-4o-mini not among them" in llm.message
    assert len(asked) == 1 and asked[0]["_auth"] == f"Bearer {KEY}"
    assert all(0 <= c.seconds < 5 for c in health.checks)


def test_the_probe_lets_the_milvus_lite_file_go_for_the_app_to_open(home: Path) -> None:
    assert check_health(Settings(home=home)).healthy
    store = VectorStore(str(home / "milvus.db"))  # would be StoreLockedError if still held
    store.close()


def test_no_endpoint_configured_is_skipped_and_still_healthy(home: Path) -> None:
    health = check_health(Settings(home=home))
    assert health.healthy
    assert health.checks[2].status is Status.SKIPPED
    assert "No LLM endpoint is configured" in health.checks[2].message


def test_an_endpoint_on_a_dead_port_fails_in_one_sentence_within_seconds(home: Path) -> None:
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    started = time.monotonic()
    health = check_health(Settings(home=home, openai_base_url=url))
    assert time.monotonic() - started < 5
    llm = health.checks[2]
    assert not health.healthy and llm.status is Status.FAILING
    assert llm.message.startswith(f"The LLM endpoint at {url} cannot be reached")
    assert llm.message.endswith("check OPENAI_BASE_URL and that the server is running.")


def test_an_endpoint_that_refuses_the_key_fails_without_quoting_it(home: Path) -> None:
    with FakeOpenAI() as fake:
        fake.fail("401")  # the fake quotes the key back in its body, as careless servers do
        health = check_health(Settings(home=home, openai_base_url=fake.url, openai_api_key=KEY))
    llm = health.checks[2]
    assert llm.status is Status.FAILING
    assert "refused the API key (HTTP 401)" in llm.message and KEY not in llm.message


def test_an_endpoint_that_fails_or_stalls_is_failing(home: Path) -> None:
    with FakeOpenAI(timeout_sleep_s=10) as fake:
        fake.fail("500", "timeout")
        settings = Settings(home=home, openai_base_url=fake.url)
        failed, stalled = check_health(settings).checks[2], check_health(settings).checks[2]
    assert failed.status is Status.FAILING and "HTTP 500" in failed.message
    assert stalled.status is Status.FAILING and "did not answer within 3 s" in stalled.message
    assert stalled.seconds < 5


def test_a_misspelt_home_is_reported_missing_and_not_created(tmp_path: Path) -> None:
    typo = tmp_path / "hmoe"
    health = check_health(Settings(home=typo))
    catalog, vectors, _ = health.checks
    assert not health.healthy
    assert catalog.status is vectors.status is Status.FAILING
    assert catalog.message.startswith(f"There is no catalog at {typo / 'catalog.db'}")
    assert vectors.message.startswith(f"There is no Milvus Lite file at {typo / 'milvus.db'}")
    assert not typo.exists()


def test_a_catalog_that_is_not_a_database_fails_in_one_sentence(home: Path) -> None:
    for name in ("catalog.db-wal", "catalog.db-shm"):
        (home / name).unlink(missing_ok=True)
    (home / "catalog.db").write_bytes(b"not a database at all" * 100)
    catalog = check_health(Settings(home=home)).checks[0]
    assert catalog.status is Status.FAILING
    assert catalog.message == (
        f"The catalog at {home / 'catalog.db'} cannot be read: file is not a database."
    )


def test_an_empty_catalog_file_is_not_a_home(tmp_path: Path) -> None:
    (tmp_path / "catalog.db").touch()  # SQLite takes an empty file for an empty database
    catalog = check_health(Settings(home=tmp_path)).checks[0]
    assert catalog.status is Status.FAILING and "holds no tables" in catalog.message


def test_a_milvus_server_that_is_down_fails_in_one_sentence(home: Path) -> None:
    uri = f"http://127.0.0.1:{_dead_port()}"
    vectors = check_health(Settings(home=home, milvus_uri=uri)).checks[1]
    assert vectors.status is Status.FAILING
    assert vectors.message.startswith(f"The Milvus server at {uri} cannot be opened:")


def test_a_running_milvus_server_answers(home: Path, milvus_server: str) -> None:
    vectors = check_health(Settings(home=home, milvus_uri=milvus_server)).checks[1]
    assert vectors.status is Status.OK
    assert vectors.message.startswith(f"The Milvus server at {milvus_server} answers (")


@pytest.mark.process
def test_a_file_the_app_holds_is_held_not_failing_and_names_the_holder(
    home: Path, holder: subprocess.Popen[str]
) -> None:
    vectors = check_health(Settings(home=home)).checks[1]
    assert vectors.status is Status.HELD
    assert f"is held by process {holder.pid}:" in vectors.message
    assert "in use, not broken" in vectors.message


@pytest.mark.process
def test_the_command_exits_zero_on_a_held_home_with_json_and_no_traceback(
    home: Path, holder: subprocess.Popen[str]
) -> None:
    ran = zhixing_process(home, "health", "--json", env={"OPENAI_BASE_URL": None}, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""  # neither Milvus Lite's traceback nor gRPC's noise
    report = json.loads(ran.stdout)
    assert report["healthy"] is True
    assert {part: c["status"] for part, c in report["checks"].items()} == {
        "catalog": "ok",
        "vectors": "held",
        "llm": "skipped",
    }
    assert all(isinstance(c["seconds"], float) for c in report["checks"].values())


def test_the_command_exits_one_when_a_part_fails_and_prints_a_line_a_part(home: Path) -> None:
    dead = f"http://127.0.0.1:{_dead_port()}/v1"
    ran = zx(home, "health", check=False, env={"OPENAI_BASE_URL": dead})
    assert ran.returncode == 1
    lines = ran.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["catalog", "ok"],
        ["vectors", "ok"],
        ["llm", "failing"],
    ]
    skipped = zx(home, "health", "--skip", "llm", "--json", env={"OPENAI_BASE_URL": dead})
    assert json.loads(skipped.stdout)["checks"]["llm"]["status"] == "skipped"


def test_an_unknown_part_is_refused_with_the_valid_names(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"Unknown part\(s\) graph; use catalog, vectors, llm\."):
        check_health(Settings(home=home), skip=["graph"])
