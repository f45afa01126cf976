"""Cancel within seconds, in Chromium (issue 33): on the build page, 取消 pressed while a slow
LLM endpoint enriches the chunks, or while a slow embedding endpoint embeds them, says
"cancelled" within 10 s, with what was indexed and what was left; the knowledge base holds
whole documents only; 继续构建 (resume) finishes the build into what a build without cancel
makes. The app runs against the fake OpenAI server (tests/fake_openai.py) for both."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import chromium, create_from_uploads, require_chromium, serve_app
from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

pytestmark = [pytest.mark.slow, pytest.mark.browser]
TIMEOUT_MS = 120_000
CANCELLED_WITHIN_MS = 10_000
EMBEDDING = "openai:fake-embedding"


def _files(folder: Path, count: int) -> list[str]:
    paths = []
    for i in range(count):
        path = folder / f"rule-{i:02d}.md"
        path.write_text(
            f"# Rule {i}\n\nService {i} checks every request {i} before it is served, and logs"
            f" the outcome of check {i}.\n",
            encoding="utf-8",
        )
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


class App:
    """The app against the fake server, one per module: each test builds its own knowledge
    base. The last test stops it, since Milvus Lite lets one process open the home."""

    def __init__(self, home: Path, fake: FakeOpenAI) -> None:
        self.home = home
        env = {
            "OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": "sk-browser-test",
            "ZHIXING_EMBEDDING": EMBEDDING,
            "ZHIXING_LLM_CONCURRENCY": "2",  # a slow model: two requests at a time
            "ZHIXING_EMBED_BATCH": "4",
        }
        self._served = serve_app(home, env)
        self.url = self._served.__enter__()
        self.running = True

    def stop(self) -> None:
        if self.running:
            self._served.__exit__(None, None, None)
            self.running = False


@pytest.fixture(scope="module")
def app(tmp_path_factory, fake: FakeOpenAI) -> Iterator[App]:
    require_chromium()
    served = App(tmp_path_factory.mktemp("cancel") / "home", fake)
    yield served
    served.stop()


def _cancel(page, wait_for, what: str) -> float:  # noqa: ANN001
    """Press 取消 once `wait_for()` holds; return the seconds until the page says cancelled."""
    deadline = time.monotonic() + 60
    while not wait_for():
        assert time.monotonic() < deadline, f"the build never reached {what}"
        time.sleep(0.05)
    started = time.monotonic()
    page.get_by_role("button", name="取消", exact=True).click()
    page.get_by_text(re.compile(r"已取消：已索引 \d+ 篇文档")).wait_for(timeout=CANCELLED_WITHIN_MS)
    return time.monotonic() - started


def _whole_documents(home: Path, name: str) -> tuple[int, int]:
    """(documents, chunks) of a knowledge base in the catalog, every document `indexed`."""
    with sqlite3.connect(f"file:{home / 'catalog.db'}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT d.status, d.chunks FROM documents d JOIN knowledge_bases k"
            " ON d.kb_id = k.id WHERE k.name = ?",
            (name,),
        ).fetchall()
        (stored,) = conn.execute(
            "SELECT COUNT(*) FROM chunks c JOIN knowledge_bases k ON c.kb_id = k.id"
            " WHERE k.name = ?",
            (name,),
        ).fetchone()
    assert {status for status, _ in rows} <= {"indexed"}, rows
    assert stored == sum(n for _, n in rows)
    return len(rows), stored


def _resume(page, name: str) -> None:  # noqa: ANN001
    page.get_by_role("button", name="继续构建").click()
    done = page.get_by_text(re.compile(rf"「{name}」· \d+ 个文件 · 已完成"))
    done.wait_for(timeout=TIMEOUT_MS)


def test_cancel_during_enrichment_says_cancelled_in_seconds_and_resume_finishes(
    page, app: App, fake: FakeOpenAI, tmp_path: Path
) -> None:
    files = _files(tmp_path, 8)
    fake.latency_s = 1.0  # a slow model, a second a request
    create_from_uploads(page, app.url, "enrich", files)
    took = _cancel(page, lambda: fake.chat_count >= 1, "enrichment")
    assert took < CANCELLED_WITHIN_MS / 1000
    page.get_by_text(re.compile(r"剩余 8 篇未完成")).wait_for()
    assert _whole_documents(app.home, "enrich") == (0, 0)
    sent = fake.chat_count
    page.wait_for_timeout(1500)
    assert fake.chat_count == sent  # no model call after the cancel
    fake.latency_s = 0.0
    _resume(page, "enrich")
    assert _whole_documents(app.home, "enrich")[0] == 8
    print(f"\nChromium: cancelled during enrichment in {took:.2f} s")


def test_cancel_during_embedding_says_cancelled_in_seconds_and_resume_finishes(
    page, app: App, fake: FakeOpenAI, tmp_path: Path
) -> None:
    files = _files(tmp_path, 12)
    fake.embedding_latency_s = 1.5  # a slow embedding endpoint; the model answers at once
    embedded = fake.embedding_count
    create_from_uploads(page, app.url, "embed", files)
    took = _cancel(page, lambda: fake.embedding_count >= embedded + 2, "embedding")
    assert took < CANCELLED_WITHIN_MS / 1000
    documents, _ = _whole_documents(app.home, "embed")
    assert documents < 12
    page.get_by_text(re.compile(rf"剩余 {12 - documents} 篇未完成")).wait_for()
    fake.embedding_latency_s = 0.0
    _resume(page, "embed")
    assert _whole_documents(app.home, "embed")[0] == 12
    print(f"\nChromium: cancelled during embedding in {took:.2f} s")


def test_both_cancels_are_audited_and_after_resume_every_chunk_has_its_vector(
    app: App, fake: FakeOpenAI
) -> None:
    app.stop()  # Milvus Lite: one process opens the home at a time
    settings = Settings(
        home=app.home, embedding=EMBEDDING, openai_base_url=fake.url, openai_api_key="sk-test"
    )
    with KnowledgeService(settings) as svc:
        cancels = [e for e in svc.admin.audit_log() if e.action == "build.cancel"]
        assert sorted(e.target for e in cancels) == ["embed", "enrich"]
        assert all(e.detail["job"] for e in cancels)
        for name, count in (("enrich", 8), ("embed", 12)):
            kb = svc.kbs.get(name)
            docs = svc.kbs.documents(name)
            assert len(docs) == count and {d.status for d in docs} == {"indexed"}
            chunks = sum(d.chunks for d in docs)
            assert svc._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk") == chunks
