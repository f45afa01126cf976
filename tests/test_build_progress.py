"""Build progress (issue 17): a build says which stage it is in, and its progress moves through
the embedding, not only through the documents read; a running job's view follows it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import markdown_document
from tests.fakes import HashEmbedder
from zhixing.core.build.background import BuildJobs
from zhixing.core.build.events import STAGES, BuildReport, ProgressEvent, RateClock
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService


def long_document(sections: int = 90) -> bytes:
    """One Markdown document that makes well over a hundred chunks."""
    return markdown_document(
        "Service rules",
        (
            (
                f"Rule {i}",
                " ".join(f"Rule {i} says the service {v} request {i}." for v in VERBS * 12),
            )
            for i in range(sections)
        ),
    )


VERBS = ("checks", "logs", "signs", "limits", "validates", "audits")


class GatedEmbedder(HashEmbedder):
    """Embeds its first `free` calls at once, then waits for `release` (a slow CPU model, held
    still for the test to look at the build mid-embedding)."""

    def __init__(self, free: int) -> None:
        super().__init__()
        self.free = free
        self.calls = 0
        self.waiting = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > self.free:
            self.waiting.set()
            assert self.release.wait(60), "the test never released the embedder"
        return super().embed(texts)


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "rules.md"
    path.parent.mkdir()
    path.write_bytes(long_document())
    return path


def build_with_events(
    tmp_path: Path, doc: Path, *, embed_batch: int
) -> tuple[list[ProgressEvent], BuildReport]:
    """Build `doc` into an index-mode knowledge base; return every progress event and the report."""
    events: list[ProgressEvent] = []
    settings = Settings(home=tmp_path / "home", parse_workers=1, embed_batch=embed_batch)
    with KnowledgeService(settings, embedder=HashEmbedder()) as svc:
        svc.kbs.create("kb", mode="index")
        report = svc.builds.add("kb", [doc], on_event=events.append)
    return events, report


def test_a_one_document_build_moves_through_the_embedding_and_names_each_stage(
    tmp_path: Path, doc: Path
) -> None:
    events, _ = build_with_events(tmp_path, doc, embed_batch=1000)
    assert {e.stage for e in events} <= set(STAGES)
    read = next(i for i, e in enumerate(events) if e.stage == "parse")
    assert events[read].done == events[read].total == 1  # the one document is read at once…
    embedding = [e for e in events if e.stage == "embedding"]
    texts = embedding[0].steps
    assert texts > 128  # (one batch: every chunk of the document)
    # … and then the progress moves step by step while its texts are embedded.
    assert [e.step for e in embedding] == [*range(0, texts, 64), texts]
    assert {e.steps for e in embedding} == {texts}
    fractions = [e.fraction for e in events[read:]]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len({f for f in fractions if 0 < f < 1}) >= 2
    stages = [e.stage for e in events]
    assert stages.index("embedding") < stages.index("indexing") < stages.index("done")


def test_a_running_job_shows_its_stage_and_a_fraction_between_its_steps(
    tmp_path: Path,
) -> None:
    embedder = GatedEmbedder(free=1)
    settings = Settings(home=tmp_path / "home", parse_workers=1, embed_batch=1000)
    jobs = BuildJobs()
    with KnowledgeService(settings, embedder=embedder) as svc:
        svc.kbs.create("kb", mode="index")
        job = jobs.start(svc.builds, "kb", [("rules.md", long_document())])
        try:
            assert embedder.waiting.wait(60)
            view = jobs.get(job.id)
            assert view is not None and view.running
            assert (view.done, view.total) == (1, 1)  # every document read; the bar is not full
            assert view.stage == "embedding" and view.step == 64 and view.steps > 64
            assert 0 < view.fraction < 1
            assert view.fraction == pytest.approx(64 / view.steps)
        finally:
            embedder.release.set()
            jobs.wait_all(120)
    view = jobs.get(job.id)
    assert view is not None and view.state == "done" and view.fraction == 1.0
    stages = [line.stage for line in view.log]
    assert stages[0] == "staged" and stages[-1] == "finished"
    assert "embedding" in stages


def test_the_indexed_chunks_rise_batch_by_batch_while_the_build_embeds(
    tmp_path: Path, doc: Path
) -> None:
    events, report = build_with_events(tmp_path, doc, embed_batch=32)
    # Each batch says so once its vectors are written, with the chunks indexed so far …
    written = [e for e in events if e.stage == "indexing" and e.step == e.steps > 0]
    assert [e.chunks for e in written] == [
        min(32 * n, report.chunks) for n in range(1, len(written) + 1)
    ]
    assert len(written) == -(-report.chunks // 32) >= 4
    # … and every event counts the chunks embedded, ahead of those written, out of those read.
    embedded = [e.embedded for e in events]
    assert embedded == sorted(embedded) and embedded[-1] == report.chunks
    assert all(e.chunks <= e.embedded <= e.queued for e in events)
    assert any(0 < e.chunks < e.embedded for e in events if e.stage == "embedding")


def test_the_time_left_is_measured_from_the_recent_rate_once_there_is_enough_to_measure() -> None:
    now = [0.0]
    clock = RateClock(window_s=10.0, min_span_s=2.0, clock=lambda: now[0])
    assert clock.eta(0.0) is None
    now[0] = 30.0  # a slow start (a model loading, the first LLM batch): the first progress
    assert clock.eta(0.01) is None  # nothing measured yet
    now[0] = 31.0
    assert clock.eta(0.02) is None  # one second of progress is not enough to measure
    now[0] = 40.0  # 0.01 a second: 0.9 left takes 90 s, not the 2,000 s the start suggests
    assert clock.eta(0.10) == pytest.approx(0.90 / (0.09 / 10))
    for second in range(41, 61):  # then it runs four times faster
        now[0] = float(second)
        eta = clock.eta(0.10 + 0.04 * (second - 40))
    assert eta == pytest.approx(0.10 / 0.04)  # the last ten seconds' rate, not the average
    assert clock.eta(1.0) == 0.0
