"""A team's set-up on one machine (issue 19): the app and the `zhixing` command share one home
whose vectors live on a Milvus server (`milvus-lite server` here, as `make serve-team` runs
it). The command builds while the served app answers searches in Chromium: no lock, no error,
and the app finds what the command just added."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import ROOT, chromium, open_page, require_chromium, serve_app, settle
from tests.command import zx
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.process]
TIMEOUT_MS = 120_000
ADDED = 12  # documents the command adds while the app serves


def _search(page, question: str) -> str:  # noqa: ANN001
    """Run one search cell in the notebook; return the page's text once it has run."""
    page.locator(".st-key-recall-mode").get_by_text("检索", exact=True).click()
    box = page.locator(".st-key-recall-query input")
    box.fill(question)
    box.press("Enter")
    settle(page)
    return page.locator("body").inner_text()


def test_the_command_builds_while_the_served_app_answers_on_one_milvus_server(
    tmp_path: Path,
    milvus_server: str,
    embedder,  # noqa: ANN001
) -> None:
    require_chromium()
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "base.md").write_text("# Base\n\nKeys rotate every ninety days.\n", encoding="utf-8")
    for i in range(ADDED):
        (docs / f"note-{i}.md").write_text(
            f"# Note {i}\n\nRunbook zebra{i} restarts the queue worker number {i}.\n",
            encoding="utf-8",
        )
    with KnowledgeService(Settings(home=home, milvus_uri=milvus_server), embedder=embedder) as svc:
        svc.kbs.create("team")
        assert svc.builds.add("team", [docs / "base.md"]).ok
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    env |= {"ZHIXING_HOME": str(home), "ZHIXING_MILVUS_URI": milvus_server}
    with serve_app(home, {"ZHIXING_MILVUS_URI": milvus_server}) as url, chromium() as browser:
        page = open_page(browser, f"{url}/recall")
        assert "base.md" in _search(page, "How often do keys rotate?")  # the app has the store
        build = subprocess.Popen(
            [sys.executable, "-m", "zhixing.cli.main", "add", "team", str(docs), "--json"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        during = 0
        while build.poll() is None:  # the app answers all through the build
            text = _search(page, "How often do keys rotate?")
            assert "base.md" in text and "Traceback" not in text
            during += build.poll() is None  # this search ended before the build did
        assert during >= 1, "no search ran while the command was building"
        out, err = build.communicate(timeout=300)
        assert build.returncode == 0, err
        summary = json.loads(out)
        assert (summary["added"], summary["skipped"], summary["failed"]) == (ADDED, 1, [])
        assert page.get_by_test_id("stException").count() == 0
        # What the command built, the served app finds (one catalog, one Milvus server).
        assert "note-7.md" in _search(page, "Which runbook restarts queue worker zebra7?")
    listed = zx(home, "docs", "team", "--json", env={"ZHIXING_MILVUS_URI": milvus_server})
    documents = json.loads(listed.stdout)
    assert len(documents) == ADDED + 1 and {d["status"] for d in documents} == {"indexed"}
