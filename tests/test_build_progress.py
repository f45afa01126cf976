"""Build progress (issue 17): a build says which stage it is in, and its progress moves through
the embedding, not only through the documents read; a running job's view follows it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from tests.fakes import HashEmbedder
from zhixing.core.build.background import BuildJobs
from zhixing.core.build.events import STAGES, ProgressEvent
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService


def long_document(sections: int = 90) -> bytes:
    """One Markdown document that makes well over a hundred chunks."""
    body = "".join(
        f"## Rule {i}\n\n"
        + " ".join(f"Rule {i} says the service {verb} request {i}." for verb in VERBS * 12)
        + "\n\n"
        for i in range(sections)
    )
    return f"# Service rules\n\n{body}".encode()


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


def test_a_one_document_build_moves_through_the_embedding_and_names_each_stage(
    tmp_path: Path, doc: Path
) -> None:
    events: list[ProgressEvent] = []
    settings = Settings(home=tmp_path / "home", parse_workers=1, embed_batch=1000)
    with KnowledgeService(settings, embedder=HashEmbedder()) as svc:
        svc.create_kb("kb", mode="index")
        svc.add("kb", [doc], on_event=events.append)
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
        svc.create_kb("kb", mode="index")
        job = jobs.start(svc, "kb", [("rules.md", long_document())])
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
