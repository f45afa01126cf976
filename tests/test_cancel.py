"""Cancel within seconds, at any stage (issue 33), through the service's background jobs: a
build cancelled while a slow LLM endpoint enriches its chunks, or while its chunks are
embedded, ends `cancelled` in seconds with a consistent knowledge base (whole documents only,
a vector for every chunk of them), says what it kept and what it left, is audited, and a
resume finishes it into the knowledge base a build without cancel makes."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import markdown_document
from tests.fake_openai import FakeOpenAI
from tests.fakes import HashEmbedder
from zhixing.core.build.background import BuildJobs
from zhixing.core.build.job import JobView
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

CANCEL_WITHIN_S = 10.0
RULES = ("checks", "logs", "signs", "limits", "validates", "audits")


def document(i: int, sections: int = 3) -> bytes:
    """A small Markdown document of a few chunks (with `chunk_units` 80)."""
    return markdown_document(
        f"Policy {i}",
        (
            (
                f"Rule {i}.{s}",
                " ".join(f"Service {i} {v} request {s} before it is served." for v in RULES),
            )
            for s in range(sections)
        ),
    )


UPLOADS = [(f"policy-{i}.md", document(i)) for i in range(8)]


class SlowEmbedder(HashEmbedder):
    """A CPU model's pace: each call takes `delay_s`; the build embeds `batch_size` at a step."""

    batch_size = 8

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        time.sleep(self.delay_s)
        return super().embed(texts)


def wait_for(test, what: str, timeout_s: float = 60) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not test():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def cancel_and_time(svc: KnowledgeService, job: JobView) -> tuple[JobView, float]:
    """Cancel through the service; return the ended job and the seconds it took to end."""
    started = time.monotonic()
    svc.builds.cancel(job.id)
    wait_for(lambda: not svc.builds.job(job.id).running, "the job to end", CANCEL_WITHIN_S + 5)
    took = time.monotonic() - started
    view = svc.builds.job(job.id)
    assert view is not None
    return view, took


def assert_consistent(svc: KnowledgeService, name: str) -> tuple[int, int]:
    """No document `indexed` without every vector, no vector of a half-built document: return
    (documents, chunks)."""
    kb = svc.kbs.get(name)
    docs = svc.kbs.documents(name)
    assert {d.status for d in docs} <= {"indexed"}, [(d.source, d.status) for d in docs]
    chunks = sum(d.chunks for d in docs)
    assert svc._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk") == chunks
    return len(docs), chunks


def reference(svc: KnowledgeService, mode: str) -> tuple[int, int]:
    """The same uploads built without a cancel, into a knowledge base of their own."""
    svc.kbs.create("reference", mode=mode)
    view = svc.builds.start("reference", UPLOADS)
    wait_for(lambda: not svc.builds.job(view.id).running, "the reference build", 120)
    assert svc.builds.job(view.id).state == "done"
    return assert_consistent(svc, "reference")


@contextlib.contextmanager
def embedding_build(
    tmp_path: Path, embedder: SlowEmbedder
) -> Iterator[tuple[KnowledgeService, JobView]]:
    """An index-mode build of the uploads, in batches of 8 chunks, once its first is written."""
    settings = Settings(
        home=tmp_path / "home",
        parse_workers=1,
        embed_batch=8,
        chunk_units=80,
        chunk_overlap_units=8,
    )
    with KnowledgeService(settings, embedder=embedder, jobs=BuildJobs()) as svc:
        svc.kbs.create("kb", mode="index")
        job = svc.builds.start("kb", UPLOADS)
        wait_for(lambda: (svc.builds.job(job.id).chunks or 0) >= 8, "the first batch written")
        yield svc, job


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(latency_s=0.6) as server:
        yield server


def test_a_cancel_during_enrichment_abandons_the_model_calls_and_a_resume_finishes(
    tmp_path, fake
) -> None:
    settings = Settings(
        home=tmp_path / "home",
        parse_workers=1,
        openai_base_url=fake.url,
        openai_api_key="sk-test",
        llm_concurrency=2,
        chunk_units=80,
        chunk_overlap_units=8,
    )
    with KnowledgeService(settings, embedder=HashEmbedder(), jobs=BuildJobs()) as svc:
        svc.kbs.create("kb", mode="index")
        job = svc.builds.start("kb", UPLOADS)
        wait_for(lambda: fake.chat_count >= 2, "the first model calls")
        view, took = cancel_and_time(svc, job)
        sent = fake.chat_count
        assert view.state == "cancelled", view.log[-3:]
        assert took < CANCEL_WITHIN_S, f"the cancel took {took:.1f} s"
        report = view.report
        assert report is not None and report.cancelled and report.left == len(UPLOADS)
        assert report.indexed == 0 and view.log[-1].stage == "cancelled"
        assert assert_consistent(svc, "kb") == (0, 0)
        time.sleep(1.0)  # the abandoned requests end; no new one is sent
        assert fake.chat_count == sent
        # The cancel is audited: who, which knowledge base, which job.
        [entry] = [e for e in svc.admin.audit_log() if e.action == "build.cancel"]
        assert entry.target == "kb" and entry.detail["job"] == job.id
        # The uploads stayed for the resume, which finishes the build.
        fake.latency_s = 0.0
        resumed = svc.builds.resume(job.id)
        wait_for(lambda: not svc.builds.job(resumed.id).running, "the resumed build", 120)
        assert svc.builds.job(resumed.id).state == "done" and svc.builds.job(job.id) is None
        assert assert_consistent(svc, "kb") == reference(svc, "index")
        print(f"\ncancel during enrichment took {took:.2f} s")


def test_a_cancel_during_embedding_stops_between_steps_and_keeps_whole_documents(
    tmp_path,
) -> None:
    embedder = SlowEmbedder(delay_s=0.15)
    with embedding_build(tmp_path, embedder) as (svc, job):
        embedder.delay_s = 1.0  # a slow step is in hand when the cancel comes
        wait_for(lambda: embedder.calls >= 2, "a step in hand")
        view, took = cancel_and_time(svc, job)
        assert view.state == "cancelled" and took < CANCEL_WITHIN_S, (view.state, took)
        report = view.report
        assert report is not None and 0 < report.indexed < len(UPLOADS)
        assert report.left == len(UPLOADS) - report.indexed
        docs, chunks = assert_consistent(svc, "kb")
        assert docs == report.indexed and chunks == report.chunks
        calls = embedder.calls
        time.sleep(1.2)
        assert embedder.calls <= calls + 1  # the step in hand at most; no new one
        embedder.delay_s = 0.0
        resumed = svc.builds.resume(job.id)
        wait_for(lambda: not svc.builds.job(resumed.id).running, "the resumed build", 120)
        final = svc.builds.job(resumed.id)
        assert final.state == "done" and len(final.report.skipped) == report.indexed
        assert assert_consistent(svc, "kb") == reference(svc, "index")
        print(f"\ncancel during embedding took {took:.2f} s")


def test_a_cancelled_build_is_resumed_by_the_command_line_resume(tmp_path) -> None:
    embedder = SlowEmbedder(delay_s=0.1)
    with embedding_build(tmp_path, embedder) as (svc, job):
        view, _ = cancel_and_time(svc, job)
        assert view.state == "cancelled" and view.report.left
        embedder.delay_s = 0.0
        # What `zhixing resume` runs: interrupted builds and what cancelled ones left.
        [report] = svc.builds.resume_interrupted("kb", cancelled=True)
        assert not report.cancelled and report.ok
        assert svc.builds.resume_interrupted("kb", cancelled=True) == []
        assert assert_consistent(svc, "kb") == reference(svc, "index")


def test_a_cancel_stops_a_pdf_parse_by_killing_its_worker_processes(tmp_path, monkeypatch):
    """A PDF parser that never ends (a hostile file) is killed by the cancel, not waited for."""
    import sys

    from zhixing.core.ingest import pdf

    # A worker that hangs: the seam tests use for the parser's command line.
    monkeypatch.setattr(
        pdf, "_worker_command", lambda: [sys.executable, "-c", "import time; time.sleep(60)"]
    )
    sample = tmp_path / "slow.pdf"
    sample.write_bytes(_one_page_pdf())
    settings = Settings(home=tmp_path / "home", parse_workers=1)
    with KnowledgeService(settings, embedder=HashEmbedder(), jobs=BuildJobs()) as svc:
        svc.kbs.create("kb", mode="index")
        cancel = threading.Event()
        outcome: list[object] = []
        build = threading.Thread(
            target=lambda: outcome.append(svc.builds.add("kb", [sample], cancel=cancel)),
            daemon=True,
        )
        build.start()
        time.sleep(1.0)  # the worker is started and hangs
        started = time.monotonic()
        cancel.set()
        build.join(CANCEL_WITHIN_S)
        took = time.monotonic() - started
        assert not build.is_alive() and took < 3, f"the parse went on {took:.1f} s"
        [report] = outcome
        assert report.cancelled and report.left == 1 and not report.failed  # type: ignore[attr-defined]
        assert svc.kbs.documents("kb") == []
        print(f"\ncancel during a PDF parse took {took:.2f} s")


def _one_page_pdf() -> bytes:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument.new()
    document.new_page(200, 200)
    import io

    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
