"""One sentence, never a traceback (issue 13): a failure a user sees names what failed and where;
the traceback goes to the debug log under the home."""

from __future__ import annotations

from pathlib import Path

import pymilvus
import pytest

from zhixing.cli.main import main
from zhixing.core.config import Settings
from zhixing.core.logs import log_path
from zhixing.core.service import KnowledgeService


@pytest.fixture
def home(tmp_path, monkeypatch, embedder) -> Path:
    home = tmp_path / "home"
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZHIXING_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZHIXING_HOME", str(home))
    doc = tmp_path / "a.md"
    doc.write_text("# Cookies\n\nSession cookies carry the HttpOnly flag.\n", encoding="utf-8")
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb")
        assert svc.builds.add("kb", [doc]).ok
    return home


def test_an_unexpected_failure_is_one_sentence_and_its_traceback_is_in_the_debug_log(
    home, monkeypatch, capsys
) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("the vector index is corrupt\nsecond line")

    monkeypatch.setattr(pymilvus.MilvusClient, "search", broken)  # a third-party seam
    assert main(["search", "kb", "HttpOnly"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "zhixing search" in lines[0] and "RuntimeError: the vector index is corrupt" in err
    logged = log_path(home).read_text(encoding="utf-8")
    assert "Traceback" in logged and "RuntimeError" in logged
    assert str(log_path(home)) in lines[0]


def test_a_reader_that_breaks_fails_that_document_alone(home, tmp_path, monkeypatch) -> None:
    import docx

    class Broken:  # opens, then breaks while being read, as a library bug would
        def iter_inner_content(self):
            raise RuntimeError("lxml broke\nhalf-way")

    monkeypatch.setattr(docx, "Document", lambda *a, **k: Broken())  # a third-party seam
    good = tmp_path / "b.md"
    good.write_text("# Logging\n\nNever log passwords.\n", encoding="utf-8")
    bad = tmp_path / "c.docx"
    bad.write_bytes((Path(docx.__file__).parent / "templates" / "default.docx").read_bytes())
    with KnowledgeService(Settings(home=home, parse_workers=1)) as svc:
        report = svc.builds.add("kb", [good, bad])
    assert len(report.added) == 1 and report.chunks == 1
    (failure,) = report.failed
    assert "c.docx" in failure.error and "RuntimeError: lxml broke half-way" in failure.error
    assert "\n" not in failure.error and "Traceback" not in failure.error
