"""Files that cannot be read never block the others (issue 33): a knowledge base is created
with whatever the user gave, the readable files are built, and each unreadable one is listed
among its documents as failed, with the sentence that says why, through the service, the CLI
and the build page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.command import zx
from tests.pages import open_page, run
from zhixing.core.config import Settings
from zhixing.core.ingest.uploads import UploadRefusedError
from zhixing.core.service import BuildJobs, KnowledgeService

GOOD = b"# Session cookies\n\nSession cookies carry the HttpOnly and Secure flags.\n"
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4  # a program, named as Markdown
# The misbehaving inputs, and the start of the sentence each gets.
UNREADABLE = {
    "text-named.pdf": (b"<html><body>Sign in to download</body></html>\n", "is named .pdf but"),
    "binary-named.md": (ELF, "is not a text document (binary content)"),
    "empty.md": (b"", "is empty"),
    "zip-named.md": (b"PK\x03\x04" + bytes(64), "is not a text document (binary content)"),
    "blank.txt": (b" \n\t\r\n", "is empty"),
}


def _uploads() -> list[tuple[str, bytes]]:
    return [("good.md", GOOD), *((name, data) for name, (data, _) in UNREADABLE.items())]


def _documents(svc: KnowledgeService, kb: str) -> dict[str, tuple[str, str]]:
    return {d.source: (d.status, d.error) for d in svc.kbs.documents(kb)}


def _assert_listed(documents: dict[str, tuple[str, str]]) -> None:
    assert documents.pop("good.md") == ("indexed", "")
    assert set(documents) == set(UNREADABLE)
    for name, (status, error) in documents.items():
        assert status == "failed" and error.startswith(f"{name} {UNREADABLE[name][1]}"), error


@pytest.fixture
def svc(tmp_path: Path, embedder):
    with KnowledgeService(
        Settings(home=tmp_path / "home", max_upload_mb=1), embedder=embedder, jobs=BuildJobs()
    ) as service:
        yield service


def test_uploads_that_cannot_be_read_are_listed_with_their_reasons_and_the_rest_builds(
    svc: KnowledgeService,
):
    svc.kbs.create("kb")
    refused = [("setup.exe", b"MZ\x90\x00"), ("huge.md", b"#" * (1024 * 1024 + 1))]
    view = svc.builds.start("kb", [*_uploads(), *refused])
    job = svc._home.jobs.wait(view.id, 120)
    assert job.state == "done" and job.report is not None
    assert job.report.added == ["good.md"]
    assert {f.source for f in job.report.failed} == set(UNREADABLE)
    documents = _documents(svc, "kb")
    # Refused before staging (too big, not a type Zhixing reads): listed all the same.
    assert documents.pop("setup.exe")[1].startswith("setup.exe is not a supported type (.exe)")
    assert documents.pop("huge.md") == ("failed", "huge.md is 1.0 MB, over the 1 MB upload limit.")
    _assert_listed(documents)
    hits = svc.search.query("HttpOnly", ["kb"])
    assert hits and hits[0].document == "good.md"

    # An unreadable new version of an indexed document leaves the indexed one as it was.
    again = svc._home.jobs.wait(svc.builds.start("kb", [("good.md", b"")]).id, 120)
    assert again.report is not None and [f.source for f in again.report.failed] == ["good.md"]
    assert _documents(svc, "kb")["good.md"] == ("indexed", "")


def test_with_no_readable_upload_the_knowledge_base_still_lists_each_refusal(
    svc: KnowledgeService,
):
    svc.kbs.create("kb")
    with pytest.raises(UploadRefusedError, match=r"^setup\.exe is not a supported type") as err:
        svc.builds.start("kb", [("setup.exe", b"MZ\x90\x00")])
    assert _documents(svc, "kb") == {"setup.exe": ("failed", str(err.value))}
    assert svc.builds.jobs() == []  # nothing to build, no job


def test_the_cli_indexes_the_readable_files_and_names_each_unreadable_one(tmp_path: Path):
    home, folder = tmp_path / "home", tmp_path / "files"
    folder.mkdir()
    for name, data in _uploads():
        (folder / name).write_bytes(data)
    zx(home, "kb", "create", "kb")
    added = zx(home, "add", "kb", *sorted(str(p) for p in folder.iterdir()), "--json", check=False)
    assert added.returncode == 1
    summary = json.loads(added.stdout)
    assert summary["added"] == 1
    errors = {f["document"]: f["error"] for f in summary["failed"]}
    assert set(errors) == set(UNREADABLE)
    assert all(errors[n].startswith(f"{n} {UNREADABLE[n][1]}") for n in errors), errors
    assert len([ln for ln in added.stderr.splitlines() if ln.startswith("failed: ")]) == 5
    rows = json.loads(zx(home, "docs", "kb", "--json").stdout)
    _assert_listed({r["document"]: (r["status"], r["error"]) for r in rows})


# --- the build page ---------------------------------------------------------------------------


@pytest.fixture
def page_home(build_home):
    """A temp home for the app; its builds and cached service are cleared before and after."""
    return build_home


def _create(at: AppTest, name: str, files: list[tuple[str, bytes]]) -> AppTest:
    at.text_input(key="create-name-0").set_value(name)
    at.file_uploader(key="create-files-0").set_value([(n, d, "text/plain") for n, d in files])
    at.radio(key="mode").set_value("index")
    at.button(key="create-submit").click()
    return run(at)


def test_creating_on_the_page_with_unreadable_files_builds_the_rest_and_lists_each(page_home):
    from zhixing.app.background import build_jobs

    at = _create(open_page(), "mixed", _uploads())
    assert not at.error
    [job] = build_jobs().list()
    assert build_jobs().wait(job.id, 120).state == "done"
    at = run(at)
    summary = " ".join(w.value for w in at.warning)
    assert "新增 1 篇" in summary and "失败 5 篇" in summary
    captions = " ".join(c.value for c in at.caption)
    assert all(f"{n} {reason}" in captions for n, (_, reason) in UNREADABLE.items())
    table = at.dataframe[1].value
    rows = {r["文档"]: (r["状态"], r["错误"]) for r in table.to_dict("records")}
    _assert_listed(rows)
    assert at.text_input(key="create-name-1").value == ""  # the form was reset, files too


def test_a_page_upload_of_only_unreadable_files_keeps_the_base_and_lists_each(page_home):
    from zhixing.app.background import build_jobs

    files = [("binary-named.md", ELF), ("empty.md", b"")]
    at = _create(open_page(), "unreadable", files)
    assert not at.error
    [job] = build_jobs().list()
    assert build_jobs().wait(job.id, 120).state == "done"
    at = run(at)
    assert any("新增 0 篇" in w.value and "失败 2 篇" in w.value for w in at.warning)
    rows = at.dataframe[1].value.to_dict("records")
    assert [(r["文档"], r["状态"]) for r in rows] == [
        ("binary-named.md", "failed"),
        ("empty.md", "failed"),
    ]
