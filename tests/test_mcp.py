"""`zhixing mcp`: an MCP client session (the official SDK's stdio client) on the sample home.

The server is the real `zhixing mcp` process; the client starts it, lists its tools, calls them
and opens the chunks they cite as an IDE agent would. A second session acts as a viewer the
knowledge base is closed to. (Streamable HTTP, with a token per user: tests/test_mcp_http.py.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

from tests.command import zhixing
from zhixing.core import __version__
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = "payroll-2027"

pytestmark = pytest.mark.process


@pytest.fixture
def home(tmp_path, sample_home, embedder) -> Path:
    """The sample home, with two viewers and a knowledge base only bob may see."""
    home = tmp_path / "home"
    shutil.copytree(sample_home, home)
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        service.users.add("alice", "viewer", "a long enough password")
        service.users.add("bob", "viewer", "another long password")
        service.kbs.create("audits")
        service.kbs.restrict("audits", ["bob"])
        service.kbs.create(HIDDEN)  # a name alice never sends: no message may carry it
        service.kbs.restrict(HIDDEN, ["bob"])
    return home


def _best_connected(home: Path) -> str:
    with KnowledgeService(Settings(home=home)) as service:
        return service.graph.view("kb").nodes[0].name


def _session(
    home: Path,
    calls: list[tuple[str, dict[str, Any]]],
    *args: str,
    then: Callable[[ClientSession, dict[str, Any]], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """Start `zhixing mcp ARGS`, list its tools and make the calls, then `then(session, seen)`;
    what came back."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "zhixing.cli.main", "mcp", *args],
        env={**env, "ZHIXING_HOME": str(home)},
        cwd=str(ROOT),
    )
    seen: dict[str, Any] = {}

    async def talk() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            seen["server"] = (await session.initialize()).server_info
            seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            seen["calls"] = await call_all(session, calls)
            if then is not None:
                await then(session, seen)

    async def within_time() -> None:
        with anyio.fail_after(120):
            await talk()

    anyio.run(within_time)
    return seen


async def call_all(
    session: ClientSession, calls: list[tuple[str, dict[str, Any]]]
) -> list[tuple[bool, Any, str]]:
    """Make the calls: (is_error, structured content or parsed text, text) of each."""
    out = []
    for name, arguments in calls:
        result = await session.call_tool(name, arguments)
        text = "".join(getattr(c, "text", "") for c in result.content)
        body = result.structured_content if not result.is_error else None
        out.append((result.is_error, body or _json(text), text))
    return out


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def test_a_client_lists_searches_asks_and_walks_the_graph(home) -> None:
    entity = _best_connected(home)
    calls = [
        ("list_knowledge_bases", {}),
        ("search", {"query": "idle session timeout", "knowledge_bases": ["kb"], "top_k": 3}),
        ("ask", {"question": "How long until an idle session expires?", "knowledge_bases": ["kb"]}),
        ("graph_neighbourhood", {"knowledge_base": "kb", "entity": entity.upper()}),
        ("ask", {"question": "What is the capital of Mongolia?", "knowledge_bases": ["kb"]}),
    ]
    seen = _session(home, calls)
    assert set(seen["tools"]) == {"list_knowledge_bases", "search", "ask", "graph_neighbourhood"}
    assert "query" in seen["tools"]["search"].input_schema["properties"]
    listed, searched, asked, graph, unknown = seen["calls"]
    assert not any(error for error, _, _ in seen["calls"]), seen["calls"]
    assert {k["name"] for k in listed[1]["knowledge_bases"]} == {"kb", "audits", HIDDEN}
    hits = searched[1]["hits"]
    assert 1 <= len(hits) <= 3 and "15 minutes" in hits[0]["text"]
    assert hits[0]["knowledge_base"] == "kb" and hits[0]["document"].endswith(".md")
    assert hits[0]["line_start"] >= 1 and hits[0]["chunk_id"] > 0
    answer = asked[1]
    assert answer["found"] and "15" in answer["answer"] and answer["citations"]
    assert answer["rounds"] and answer["rounds"][0]["round"] == 1
    assert entity in {n["name"] for n in graph[1]["nodes"]} and graph[1]["edges"]
    assert unknown[1]["found"] is False


def test_a_viewer_never_learns_a_name_it_may_not_see_and_restricted_reads_as_missing(home) -> None:
    """alice (a viewer) names "audits" (restricted to bob) and names that do not exist, through
    every tool that takes a name; each refusal reads as a missing one does, and no message
    names a knowledge base she may not see ("payroll-2027" she never sends)."""
    long = "x" * 5000
    names = ["audits", "nonexistent", "@audits", "AUDITS", "audits ", "payroll", long, "a\x00'b"]
    calls: list[tuple[str, dict[str, Any]]] = [("list_knowledge_bases", {})]
    for name in names:
        calls += [
            ("search", {"query": "anything", "knowledge_bases": [name]}),
            ("search", {"query": "anything", "knowledge_bases": ["kb", name]}),
            ("ask", {"question": "what is audited?", "knowledge_bases": [name]}),
            ("graph_neighbourhood", {"knowledge_base": name, "entity": "session"}),
        ]
    calls += [
        ("graph_neighbourhood", {"knowledge_base": "kb", "entity": "no such entity at all"}),
        ("search", {"query": "audits payroll", "knowledge_bases": []}),  # all she may see
    ]
    seen = _session(home, calls, "--user", "alice")["calls"]
    listed, *refusals, missing_entity, everything = seen
    assert [k["name"] for k in listed[1]["knowledge_bases"]] == ["kb"]
    assert all(error for error, _, _ in refusals) and not everything[0]
    assert {h["knowledge_base"] for h in everything[1]["hits"]} <= {"kb"}
    assert missing_entity[0] and "no entity named" in missing_entity[2]
    texts = [text for _, _, text in seen]
    assert not any(HIDDEN in text for text in texts)  # not listed, not in "known:", nowhere
    for text in texts[1:]:
        assert "restricted" not in text and "bob" not in text and "Traceback" not in text

    # Each tool says the same of the restricted name as of a missing one, word for word.
    def worded(text: str) -> str:
        return re.sub(r"named .* that alice", "named NAME that alice", text)

    by_name = {name: refusals[4 * i : 4 * i + 4] for i, name in enumerate(names)}
    for name in names:
        assert [worded(t) for _, _, t in by_name[name]] == [
            worded(t) for _, _, t in by_name["audits"]
        ], name
    assert refusals[0][2].endswith(
        "There is no knowledge base named 'audits' that alice may see (known: kb)."
    )
    assert all(len(text) < 300 for _, _, text in by_name[long])  # 5,000 characters, cut short


def test_an_unknown_user_is_refused_in_one_sentence(home) -> None:
    ran = zhixing(home, "mcp", "--user", "mallory")
    assert ran.returncode == 1 and ran.stdout == ""
    assert ran.stderr.startswith("zhixing: There is no user named 'mallory'")
    assert ran.stderr.count("\n") == 1


def test_tools_say_they_only_read_and_publish_their_bounds_schemas_and_version(home) -> None:
    """What a client reads before it calls: the server's version, each tool's read-only hint,
    each argument's description and bounds, each result's schema; a value out of bounds is
    refused in one sentence (never clamped), and a hit's uri opens its chunk and document."""
    calls = [
        ("search", {"query": "idle session timeout", "knowledge_bases": ["kb"], "top_k": -5}),
        ("search", {"query": "idle session timeout", "top_k": "many"}),
        ("ask", {"question": "why?", "max_rounds": 9}),
        ("search", {"knowledge_bases": ["kb"]}),
        ("search", {"query": "idle session timeout", "knowledge_bases": ["kb"], "top_k": 2}),
    ]
    opened: dict[str, Any] = {}

    async def open_citation(session: ClientSession, seen: dict[str, Any]) -> None:
        hit = seen["calls"][-1][1]["hits"][0]
        chunk = json.loads((await session.read_resource(hit["uri"])).contents[0].text)
        document = (await session.read_resource(chunk["document_uri"])).contents[0].text
        opened.update(hit=hit, chunk=chunk, document=json.loads(document))
        templates = (await session.list_resource_templates()).resource_templates
        opened["templates"] = {t.uri_template for t in templates}
        with pytest.raises(MCPError) as missing:
            await session.read_resource("zhixing://chunks/999999")
        opened["missing"] = str(missing.value)

    seen = _session(home, calls, then=open_citation)
    assert seen["server"].name == "zhixing" and seen["server"].version == __version__
    for tool in seen["tools"].values():
        assert tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.destructive_hint is False, tool.name
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        for name, field in tool.input_schema["properties"].items():
            assert field.get("description"), (tool.name, name)
    top_k = seen["tools"]["search"].input_schema["properties"]["top_k"]
    assert (top_k["minimum"], top_k["maximum"], top_k["default"]) == (1, 50, 8)
    assert "hits" in seen["tools"]["search"].output_schema["properties"]
    rounds = seen["tools"]["ask"].input_schema["properties"]["max_rounds"]
    assert (rounds["minimum"], rounds["maximum"]) == (1, 5)

    negative, wrong_type, too_many, no_query, found = seen["calls"]
    assert negative[0] and negative[2] == (
        "search: top_k should be greater than or equal to 1, not -5."
    )
    assert wrong_type[0] and wrong_type[2].startswith("search: top_k should be a valid integer")
    assert (
        too_many[0] and too_many[2] == "ask: max_rounds should be less than or equal to 5, not 9."
    )
    assert no_query[0] and no_query[2] == "search needs query; see its input schema."
    for _, _, text in (negative, wrong_type, too_many, no_query):
        assert text.count(".") <= 2 and "pydantic" not in text and "http" not in text
    assert not found[0] and 1 <= len(found[1]["hits"]) <= 2

    hit, chunk, document = opened["hit"], opened["chunk"], opened["document"]
    assert hit["uri"] == f"zhixing://chunks/{hit['chunk_id']}"
    assert chunk["text"] == hit["text"] and chunk["document"] == hit["document"]
    assert (chunk["line_start"], chunk["knowledge_base"]) == (hit["line_start"], "kb")
    assert document["document"] == hit["document"]
    assert hit["chunk_id"] in [c["chunk_id"] for c in document["chunks"]]
    assert opened["templates"] == {
        "zhixing://chunks/{chunk_id}",
        "zhixing://documents/{document_id}",
    }
    assert "There is no chunk 999999 that local may see." in opened["missing"]


def test_a_viewer_cannot_open_a_chunk_of_a_knowledge_base_closed_to_her(home, embedder) -> None:
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        service.builds.add("audits", sorted((ROOT / "app" / "samples").glob("*.md"))[:1])
        closed = service.search.query("session", ["audits"], top_k=1)[0].chunk_id
    read: dict[str, str] = {}

    async def try_it(session: ClientSession, seen: dict[str, Any]) -> None:
        for uri in (f"zhixing://chunks/{closed}", "zhixing://chunks/999999"):
            with pytest.raises(MCPError) as refused:
                await session.read_resource(uri)
            read[uri] = str(refused.value)

    _session(home, [], "--user", "alice", then=try_it)
    assert read[f"zhixing://chunks/{closed}"] == f"There is no chunk {closed} that alice may see."
    assert read["zhixing://chunks/999999"] == "There is no chunk 999999 that alice may see."


def test_a_misspelt_home_is_one_sentence_and_is_not_made(tmp_path) -> None:
    missing = tmp_path / "hoem"
    for args in (("mcp",), ("mcp", "--http"), ("token", "list")):
        ran = zhixing(missing, *args)
        assert ran.returncode == 1 and ran.stdout == "", args
        assert ran.stderr == (
            f"zhixing: There is no Zhixing home at {missing} (no catalog.db there); check"
            " ZHIXING_HOME, or make a home first with `zhixing kb create NAME`.\n"
        )
    assert not missing.exists()
