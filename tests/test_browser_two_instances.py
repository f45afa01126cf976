"""Two app instances behind one load balancer (issue 38), in Chromium: each with a home of its
own, both on one catalog on PostgreSQL and one Milvus server (`milvus-lite server`). A build
started on one is seen on the other and cancelled from it; a notebook cell written on one is
there on the other; a build whose instance is killed is taken over and finished by the other.

The builds enrich through the fake OpenAI endpoint (tests/fake_openai.py), slowed so that
they are still running when the other instance acts.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import (
    chromium,
    create_from_uploads,
    open_page,
    require_chromium,
    serve_app,
    settle,
)
from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.process]
TIMEOUT_MS = 120_000


def _files(folder: Path, prefix: str, count: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"{prefix}-{i:02d}.md"
        path.write_text(
            f"# {prefix} {i}\n\nGateway {i} rejects request {i} unless its token {i} is"
            f" signed, and records the refusal of request {i}.\n",
            encoding="utf-8",
        )
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as browser:
        yield browser


def _cell(page, question: str) -> None:  # noqa: ANN001
    """Run one search cell in the recall page's notebook."""
    page.locator(".st-key-recall-mode").get_by_text("检索", exact=True).click()
    box = page.locator(".st-key-recall-query input")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('.st-key-recall-query input')?.value === ''",
        timeout=TIMEOUT_MS,
    )
    settle(page)


def _running_pid(settings: Settings, kb: str) -> int:
    """The process that runs the build of `kb`, as its job row says."""
    with KnowledgeService(settings) as service:
        kb_id = service.kbs.get(kb).id
        [row] = [r for r in service._home.catalog.jobs.unfinished() if r["kb_id"] == kb_id]
        return int(row["pid"])


def test_two_instances_share_builds_cancels_notebooks_and_take_over_a_killed_build(
    tmp_path: Path, browser, postgres_cluster, milvus_server: str
) -> None:  # noqa: ANN001
    require_chromium()
    shared = {
        "ZHIXING_CATALOG_URI": postgres_cluster.new_database(),
        "ZHIXING_MILVUS_URI": milvus_server,
        "ZHIXING_LLM_CONCURRENCY": "1",
        "OPENAI_API_KEY": "sk-browser-test",
    }
    with FakeOpenAI(latency_s=0.6) as fake:  # a slow model: each chunk's enrichment waits
        env = {**shared, "OPENAI_BASE_URL": fake.url}
        one_home, two_home = tmp_path / "one" / "home", tmp_path / "two" / "home"
        one_home.parent.mkdir()
        two_home.parent.mkdir()
        with serve_app(one_home, env) as one, serve_app(two_home, env) as two:
            page_one, page_two = open_page(browser, one), open_page(browser, two)

            # A build started on one is seen on two, with who runs it, and cancelled from two.
            # Two's build page is open already: it shows the build without a reload.
            page_two.goto(two)
            settle(page_two)
            create_from_uploads(page_one, one, "shared", _files(tmp_path / "a", "alpha", 10))
            page_two.get_by_text(re.compile(r"「shared」· 10 个文件 · 构建中")).wait_for()
            page_two.get_by_text("在另一个进程中运行").wait_for()
            page_two.get_by_role("button", name="取消", exact=True).click()
            page_two.get_by_text("正在取消").wait_for()
            page_one.get_by_text(re.compile(r"已取消：已索引 \d+ 篇文档")).wait_for()
            assert fake.chat_count < 10  # it stopped before enriching every chunk

            # A notebook cell written on two is there on one.
            page_two.goto(f"{two}/recall")
            settle(page_two)
            _cell(page_two, "Which gateway rejects unsigned tokens?")
            page_one.goto(f"{one}/recall")
            settle(page_one)
            page_one.get_by_text("Which gateway rejects unsigned tokens?").first.wait_for()

            # A build whose instance is killed: two takes it over and finishes it.
            create_from_uploads(page_one, one, "second", _files(tmp_path / "b", "beta", 8))
            settings = Settings.from_env({"ZHIXING_HOME": str(tmp_path / "probe"), **shared})
            pid = _running_pid(settings, "second")
            os.kill(pid, signal.SIGKILL)
            page_two.goto(two)  # (the recall page before)
            settle(page_two)
            page_two.get_by_text(re.compile(r"「second」· 8 个文件 · 已中断")).wait_for()
            page_two.get_by_role("button", name="接手继续构建").click()
            page_two.get_by_text(re.compile(r"「second」· 8 个文件 · 已完成")).wait_for(
                timeout=TIMEOUT_MS
            )
            assert page_two.get_by_test_id("stException").count() == 0
    with KnowledgeService(settings) as service:
        docs = service.kbs.documents("second")
        assert len(docs) == 8 and {d.status for d in docs} == {"indexed"}
        kb = service.kbs.get("second")
        chunks = sum(d.chunks for d in docs)
        assert service._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk") == chunks
        # What the cancel kept of the first build is whole documents only.
        assert {d.status for d in service.kbs.documents("shared")} <= {"indexed"}
