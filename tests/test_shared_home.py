"""Every front end shares a home on the embedded default (issue 38, core/store/lite_share.py):
while one process holds the home's Milvus Lite file, the CLI, two `zhixing mcp` servers and an
export run beside it, each through the holder's own Milvus Lite server; and when the holder
goes, a guest's next call takes the file over."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
QUERY = "idle session timeout"

pytestmark = pytest.mark.process


@pytest.fixture
def home(tmp_path: Path, sample_home: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(sample_home, home)
    return home


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    return {**env, "ZHIXING_HOME": str(home)}


def _zhixing(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "zhixing.cli.main", *args],
        env=_env(home),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _mcp_search(home: Path, out: list[Any]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "zhixing.cli.main", "mcp"],
        env=_env(home),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("search", {"query": QUERY, "knowledge_bases": ["kb"]})
        assert not result.is_error, result.content
        out.append(result.structured_content)


def test_the_cli_two_mcp_servers_and_an_export_run_while_another_process_holds_the_home(
    home: Path, tmp_path: Path, embedder: Any
) -> None:
    archive = tmp_path / "kb.zip"
    with KnowledgeService(Settings(home=home), embedder=embedder) as holder:  # as the app does
        assert not holder._home.vectors.is_guest
        ours = [h.chunk_id for h in holder.search.query(QUERY, ["kb"], top_k=3)]
        export = _zhixing(home, "export", "kb", str(archive))
        listing = _zhixing(home, "kb", "list")
        searched: list[Any] = []

        async def both() -> None:
            with anyio.fail_after(180):
                async with anyio.create_task_group() as group:
                    group.start_soon(_mcp_search, home, searched)
                    group.start_soon(_mcp_search, home, searched)

        anyio.run(both)
        exported, listed = export.communicate(timeout=180), listing.communicate(timeout=180)
        assert export.returncode == 0, exported[1]
        assert listing.returncode == 0 and "kb" in listed[0], listed[1]
        assert "Traceback" not in exported[1] + listed[1]
        # The holder still serves, and nothing it holds was lost or changed.
        assert [h.chunk_id for h in holder.search.query(QUERY, ["kb"], top_k=3)] == ours
    assert len(searched) == 2
    for result in searched:  # each MCP server searched the same vectors the holder did
        assert [h["chunk_id"] for h in result["hits"]][:1] == ours[:1]
    with zipfile.ZipFile(archive) as zipped:
        manifest = json.loads(zipped.read("manifest.json"))
    assert manifest["counts"]["vectors"] > 0


def _holder(home: Path) -> subprocess.Popen[str]:
    """A Zhixing process holding the home's Milvus Lite file until a line on its stdin."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from zhixing.core.config import Settings;"
            " from zhixing.core.service import KnowledgeService;"
            " s = KnowledgeService(Settings(home=pathlib.Path(sys.argv[1])));"
            " s.search.query('x', ['kb'], top_k=1); print('ready', flush=True);"
            " sys.stdin.readline(); s.close()",
            str(home),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    return holder


def test_a_guest_takes_the_file_over_when_its_holder_goes(home: Path, embedder: Any) -> None:
    holder = _holder(home)
    try:
        with KnowledgeService(Settings(home=home), embedder=embedder) as guest:
            vectors = guest._home.vectors
            assert vectors.is_guest
            before = [h.chunk_id for h in guest.search.query(QUERY, ["kb"], top_k=3)]
            assert before
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.wait(timeout=60) == 0
            # The next call finds the holder gone, opens the file itself and is answered.
            assert [h.chunk_id for h in guest.search.query(QUERY, ["kb"], top_k=3)] == before
            assert not vectors.is_guest
    finally:
        holder.kill()
        holder.wait()


def test_the_note_of_a_killed_holder_is_not_followed(home: Path, embedder: Any) -> None:
    holder = _holder(home)
    holder.kill()  # no chance to withdraw its note
    holder.wait()
    note = home / "milvus.db.serving"
    assert json.loads(note.read_text())["pid"] == holder.pid  # left behind, stale
    with KnowledgeService(Settings(home=home), embedder=embedder) as service:
        assert not service._home.vectors.is_guest  # the file is free: this process holds it
        assert service.search.query(QUERY, ["kb"], top_k=3)
    assert not note.exists()  # and withdrew its own note when it let the file go
