"""`zhixing mcp --http`: MCP over streamable HTTP, each request signed in by a user's token.

The server is a real `zhixing mcp --http` process on the sample home; the clients are the
official SDK's streamable HTTP client, each with its `Authorization: Bearer` header, as an IDE
configured with a URL and a header is. The tokens are made, listed and revoked by `zhixing
token` while the server holds the home (they need its catalog only).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.command import zhixing
from tests.test_mcp import call_all
from zhixing.cli.mcp_server import BAD_TOKEN, NO_TOKEN
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = "payroll-2027"

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, sample_home, embedder) -> tuple[Path, int]:
    """The sample home, with two viewers and knowledge bases only bob may see, and a chunk of
    one of them (found before the server holds the home's vectors)."""
    home = tmp_path_factory.mktemp("mcp-http") / "home"
    shutil.copytree(sample_home, home)
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        service.users.add("alice", "viewer", None)
        service.users.add("bob", "viewer", None)
        service.kbs.create("audits")
        service.builds.add("audits", sorted((ROOT / "app" / "samples").glob("*.md"))[:1])
        service.kbs.restrict("audits", ["bob"])
        service.kbs.create(HIDDEN)
        service.kbs.restrict(HIDDEN, ["bob"])
        closed = service.search.query("session", ["audits"], top_k=1)[0].chunk_id
    return home, closed


@pytest.fixture(scope="module")
def home(prepared: tuple[Path, int]) -> Path:
    return prepared[0]


def _token(home: Path, name: str) -> str:
    made = zhixing(home, "token", "create", name, "--days", "1")
    assert made.returncode == 0, made.stderr
    assert "shown only now" in made.stderr and made.stderr.count("\n") == 1
    return made.stdout.strip()


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[str]:
    """`zhixing mcp --http` on a free port of 127.0.0.1: its URL."""
    _token(home, "alice")  # the server refuses to start with no token at all
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "zhixing.cli.main", "mcp", "--http", "--port", str(port)],
        env={**env, "ZHIXING_HOME": str(home)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.3)
        assert process.poll() is None, process.communicate()[1]
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(30)


def _as(
    url: str, token: str | None, calls: list[tuple[str, dict[str, Any]]], chunk: int = 0
) -> Any:
    """Sign in with `token` (None: send no Authorization header), make the calls, and open
    chunk `chunk` when one is given."""
    seen: dict[str, Any] = {}

    async def talk() -> None:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            seen["server"] = (await session.initialize()).server_info
            seen["calls"] = await call_all(session, calls)
            if chunk:
                try:
                    seen["chunk"] = (
                        (await session.read_resource(f"zhixing://chunks/{chunk}")).contents[0].text
                    )
                except MCPError as exc:
                    seen["chunk"] = str(exc)

    async def within_time() -> None:
        with anyio.fail_after(120):
            await talk()

    anyio.run(within_time)
    return seen


def test_a_viewer_signs_in_with_her_token_and_sees_only_what_a_viewer_sees(home, server) -> None:
    alice = _token(home, "alice")
    calls = [
        ("list_knowledge_bases", {}),
        ("search", {"query": "idle session timeout", "top_k": 50}),
        ("search", {"query": "anything", "knowledge_bases": ["audits"]}),
        ("search", {"query": "anything", "knowledge_bases": [HIDDEN]}),
    ]
    seen = _as(server, alice, calls)
    listed, everything, audits, hidden = seen["calls"]
    assert seen["server"].name == "zhixing"
    assert [k["name"] for k in listed[1]["knowledge_bases"]] == ["kb"]
    assert everything[1]["hits"] and {h["knowledge_base"] for h in everything[1]["hits"]} == {"kb"}
    assert audits[0] and audits[2] == (
        "There is no knowledge base named 'audits' that alice may see (known: kb)."
    )
    assert hidden[0] and hidden[2] == audits[2].replace("'audits'", repr(HIDDEN))

    bob = _token(home, "bob")
    seen = _as(server, bob, calls[:1])
    assert {k["name"] for k in seen["calls"][0][1]["knowledge_bases"]} == {"kb", "audits", HIDDEN}


def test_a_chunk_opens_for_whoever_may_see_it_and_reads_as_missing_to_others(
    prepared, server
) -> None:
    home, closed = prepared
    as_bob = _as(server, _token(home, "bob"), [], chunk=closed)
    as_alice = _as(server, _token(home, "alice"), [], chunk=closed)
    assert (
        f'"chunk_id": {closed}' in as_bob["chunk"]
        and '"knowledge_base": "audits"' in as_bob["chunk"]
    )
    assert as_alice["chunk"] == f"There is no chunk {closed} that alice may see."


def _refusal(url: str, token: str | None) -> str | None:
    """What the SDK's client raised at its first request with `token` (an MCPError, inside its
    task groups), or None when the request went through."""
    try:
        _as(url, token, [("list_knowledge_bases", {})])
    except BaseException as exc:  # noqa: BLE001 - an ExceptionGroup holding the MCPError
        found = exc.exceptions if isinstance(exc, BaseExceptionGroup) else [exc]
        while found and not isinstance(found[0], MCPError):
            first = found[0]
            found = list(first.exceptions) if isinstance(first, BaseExceptionGroup) else []
        return str(found[0]) if found else None
    return None


def _refused(url: str, token: str) -> bool:
    return _refusal(url, token) is not None


def test_a_wrong_revoked_or_absent_token_is_refused(home, server) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    plain = httpx2.post(server, json=initialize, headers={"Authorization": "Bearer zx_guess"})
    assert plain.status_code == 401 and plain.headers["www-authenticate"].startswith("Bearer")
    for header in ("Bearer", "", "Basic YWxpY2U6cHc=", "Bearer zx_"):
        bare = httpx2.post(server, json=initialize, headers={"Authorization": header})
        assert bare.status_code == 401, (header, bare.status_code, bare.text)
    for token in ("zx_not-a-token", "not even the form of one"):
        assert _refused(server, token), token
    revoked = _token(home, "alice")
    assert _as(server, revoked, [("list_knowledge_bases", {})])["calls"][0][0] is False
    listed = zhixing(home, "token", "list", "--json")
    mine = [t for t in json.loads(listed.stdout) if t["user"] == "alice"]
    ran = zhixing(home, "token", "revoke", str(mine[-1]["id"]))
    assert ran.returncode == 0 and ran.stdout == f"Revoked token {mine[-1]['id']} of alice.\n"
    assert _refused(server, revoked)
    again = zhixing(home, "token", "revoke", str(mine[-1]["id"]))
    assert again.returncode == 1 and again.stderr.startswith(
        f"zhixing: There is no token {mine[-1]['id']}"
    )


def test_a_token_for_an_unknown_user_and_user_with_http_are_one_sentence(home) -> None:
    ghost = zhixing(home, "token", "create", "ghost")
    assert ghost.returncode == 1 and ghost.stdout == ""
    assert ghost.stderr.startswith("zhixing: There is no user named 'ghost'")
    assert ghost.stderr.count("\n") == 1
    both = zhixing(home, "mcp", "--http", "--user", "alice")
    assert (
        both.returncode == 1
        and both.stderr.count("\n") == 1
        and "--user is for stdio" in both.stderr
    )
    days = zhixing(home, "token", "create", "alice", "--days", "0")
    assert days.returncode == 1 and days.stderr == "zhixing: A token lasts 1 to 3650 days, not 0.\n"


def test_a_refused_request_is_told_why_in_one_sentence_of_ours(home, server) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}

    def post(**headers: str) -> httpx2.Response:
        return httpx2.post(server, json=initialize, headers=headers)

    # No token, or another scheme: RFC 6750's bare challenge, and how to get a token.
    for missing in (post(), post(Authorization="Basic YWxpY2U6cHc="), post(Authorization="Bearer")):
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == 'Bearer realm="zhixing"'
        assert missing.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": NO_TOKEN},
        }
    assert "Authorization: Bearer <token>" in NO_TOKEN and "zhixing token create" in NO_TOKEN
    # A token that signs nobody in: invalid_token, with the same sentence in the header.
    revoked = _token(home, "alice")
    listed = json.loads(zhixing(home, "token", "list", "--json").stdout)
    assert zhixing(home, "token", "revoke", str(listed[-1]["id"])).returncode == 0
    for token in ("zx_guess", revoked):
        bad = post(Authorization=f"Bearer {token}")
        assert bad.status_code == 401 and bad.json()["error"]["message"] == BAD_TOKEN
        assert bad.headers["www-authenticate"] == (
            f'Bearer realm="zhixing", error="invalid_token", error_description="{BAD_TOKEN}"'
        )
    assert BAD_TOKEN.isascii() and not {'"', "\\"} & set(BAD_TOKEN)  # RFC 6750 §3
    # The SDK's own client raises the sentence, not "Server returned an error response".
    assert _refusal(server, revoked) == BAD_TOKEN
    assert _refusal(server, None) == NO_TOKEN


def test_the_token_list_names_each_token_and_when_it_last_signed_a_request_in(home, server) -> None:
    made = zhixing(home, "token", "create", "alice", "--days", "1", "--label", "Claude Code")
    assert made.returncode == 0, made.stderr

    def listed() -> dict[str, Any]:
        tokens = json.loads(zhixing(home, "token", "list", "--json").stdout)
        [mine] = [t for t in tokens if t["label"] == "Claude Code"]
        return mine

    assert listed()["last_used"] is None
    assert _as(server, made.stdout.strip(), [("list_knowledge_bases", {})])["calls"][0][0] is False
    used = listed()
    assert used["user"] == "alice" and used["last_used"] >= used["created"]
    line = next(x for x in zhixing(home, "token", "list").stdout.splitlines() if "Claude Code" in x)
    assert "\tlast used 20" in line and line.startswith(f"{used['id']}\talice\tClaude Code\t")
