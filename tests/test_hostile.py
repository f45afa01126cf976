"""Hostile input is harmless (docs/architecture.md §10): uploads, knowledge-base names, Milvus filters,
archives, Markdown from documents, and API keys that must never leave the settings.

Real SQLite and Milvus Lite in tmp dirs, the fake OpenAI server over HTTP; no mocks.
"""

from __future__ import annotations

import logging
import sqlite3
import struct
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI
from zhixing.app.widgets import inert
from zhixing.core.build.background import BuildJobs
from zhixing.core.build.staging import stage_uploads
from zhixing.core.config import Settings
from zhixing.core.errors import AccessError, StoreError, ZhixingError
from zhixing.core.ingest import detect_kind
from zhixing.core.ingest.uploads import UploadRefusedError, check_upload
from zhixing.core.llm.check import check_connection
from zhixing.core.service import KnowledgeService
from zhixing.core.store.vectors import _filter
from zhixing.core.task import unpack_archive

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024

# --- uploads -------------------------------------------------------------------------------------


def test_the_upload_limit_matches_what_streamlit_tells_the_browser():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert Settings().max_upload_mb == config["server"]["maxUploadSize"] == 200


def test_staging_refuses_unknown_types_and_oversized_files_naming_each_and_writes_nothing(
    tmp_path: Path,
):
    uploads = [
        ("ok.md", b"# fine\n\ntext\n"),
        ("setup.exe", b"MZ\x90\x00\x03"),
        ("big.txt", b"x" * (MiB + 1)),
        ("no-extension", b"hello"),
    ]
    with pytest.raises(UploadRefusedError) as err:
        stage_uploads(tmp_path / "job", uploads, max_upload_mb=1)
    message = str(err.value)
    assert "setup.exe is not a supported type (.exe)" in message
    assert "big.txt is 1.0 MB, over the 1 MB upload limit." in message
    assert "no-extension is not a supported type (no extension)" in message
    assert "ok.md" not in message
    assert not (tmp_path / "job").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("report.pdf", b"#!/bin/sh\nrm -rf ~\n", "is named .pdf but its content is not a PDF"),
        ("contract.docx", b"plain text", "is named .docx but is not a Word (.docx) file"),
        ("notes.md", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00" * 50, "(binary content)"),
        ("data.jsonl", b"PK\x03\x04\x14\x00\x00\x00" * 40, "(binary content)"),
    ],
)
def test_content_that_contradicts_the_extension_is_refused(
    tmp_path: Path, name: str, content: bytes, reason: str
):
    # Staged (the upload check is size and extension), then refused by the content, alone:
    # tests/test_unreadable_files.py shows the other files of the upload build.
    assert check_upload(name, content, max_mb=200)
    with pytest.raises(ZhixingError) as err:
        detect_kind(_written(tmp_path / name, content))
    assert str(err.value).startswith(name) and reason in str(err.value)


def _written(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def test_documents_of_every_supported_kind_pass_the_check():
    assert check_upload("a.pdf", b"%PDF-1.7\n...", max_mb=1) == "pdf"
    assert check_upload("a.docx", b"PK\x03\x04rest", max_mb=1) == "docx"
    assert check_upload("中文.MD", "# 标题\n".encode(), max_mb=1) == "markdown"
    assert check_upload("gbk.txt", "中文".encode("gbk"), max_mb=1) == "text"
    assert check_upload("c.jsonl", b'{"id": 1}\n', max_mb=1) == "jsonl"
    assert check_upload("x.html", b"<html></html>", max_mb=1) == "html"


def test_staging_keeps_hostile_names_inside_the_job_folder(tmp_path: Path):
    names = [
        "../../etc/passwd.md",
        "/abs/path/x.txt",
        "C:\\Windows\\win.md",
        "CON.md",
        "a\x00b\x1f.md",
        "<img src=x onerror=alert(3)>.md",
        "长" * 300 + ".md",
    ]
    folder = tmp_path / "job"
    paths = stage_uploads(folder, [(n, b"# x\n") for n in names])
    root = folder.resolve()
    assert all(p.resolve().is_relative_to(root) and p.is_file() for p in paths)
    assert [p.name for p in paths][:6] == [
        "passwd.md",
        "x.txt",
        "win.md",
        "_CON.md",
        "ab.md",
        "<img src=x onerror=alert(3)>.md",
    ]
    assert len(paths[6].name.encode()) <= 240 and paths[6].name.endswith(".md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job"]


@pytest.fixture
def svc(tmp_path: Path, embedder):
    with KnowledgeService(Settings(home=tmp_path / "home"), embedder=embedder) as service:
        yield service


def test_a_refused_upload_starts_no_job_and_stages_nothing(svc: KnowledgeService):
    svc.kbs.create("kb")
    jobs = BuildJobs()
    with pytest.raises(UploadRefusedError, match="payload.exe is not a supported type"):
        jobs.start(svc.builds, "kb", [("ok.md", b"# a\n\nb\n"), ("payload.exe", b"MZ\x00")])
    assert jobs.list() == []
    uploads = svc.settings.home / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())


# --- knowledge-base names ----------------------------------------------------------------------

RULE = "needs a name of 1 to 64 characters"


@pytest.mark.parametrize(
    "name",
    ["", "   ", "x" * 65, "@all", "@kb", "a/b", "a\\b", "tab\tname", "nul\x00", "rtl\u202eevil"],
)
def test_knowledge_base_names_that_break_the_rule_are_refused_with_the_rule(
    svc: KnowledgeService, name: str
):
    with pytest.raises(StoreError, match=RULE) as err:
        svc.kbs.create(name)
    assert "not starting with '@'" in str(err.value) and "no '/' or '\\'" in str(err.value)
    assert svc.kbs.all() == []


def test_chinese_quotes_and_64_characters_are_fine_and_names_are_stripped(svc: KnowledgeService):
    for name in ["信息安全规范", "x" * 64, 'say "hi"', "it's", "a@b"]:
        assert svc.kbs.create(f"  {name}  ").name == name


SECRET = "# 保险库\n\n保险库密码是 ZEBRA-77-ORCHID，只有 CFO 知道；AES-256 属于加密算法。\n"
PUBLIC = "# 食堂\n\n食堂遵守 GB/T 22000 标准，HACCP 属于食品安全体系，周五供应面条。\n"


@pytest.mark.parametrize("hostile", ['a" or kb != "', "x') or 1=1 --"])
def test_a_knowledge_base_named_like_an_injection_touches_only_itself(
    svc: KnowledgeService, tmp_path: Path, hostile: str
):
    (tmp_path / "secret.md").write_text(SECRET, encoding="utf-8")
    (tmp_path / "public.md").write_text(PUBLIC, encoding="utf-8")
    svc.kbs.create("secret", mode="graph")
    svc.builds.add("secret", [tmp_path / "secret.md"])
    svc.kbs.create(hostile, mode="graph")
    svc.builds.add(hostile, [tmp_path / "public.md"])
    secret_stats = svc.graph.stats("secret")
    query = "保险库密码 ZEBRA-77-ORCHID"

    hits = svc.search.query(query, [hostile], top_k=20)
    assert hits and {(h.kb, h.document) for h in hits} == {(hostile, "public.md")}
    assert all("ZEBRA" not in h.text for h in hits)
    assert [d.source for d in svc.kbs.documents(hostile)] == ["public.md"]
    hostile_stats = svc.graph.stats(hostile)
    assert hostile_stats.entities > 0 and hostile_stats != secret_stats

    svc.builds.remove(hostile, "public.md")
    assert svc.kbs.documents(hostile) == [] and svc.search.query(query, [hostile]) == []
    svc.kbs.delete(hostile)
    assert [kb.name for kb in svc.kbs.all()] == ["secret"]
    assert [d.source for d in svc.kbs.documents("secret")] == ["secret.md"]
    assert svc.graph.stats("secret") == secret_stats
    assert any("ZEBRA-77-ORCHID" in h.text for h in svc.search.query(query, ["secret"]))


# --- Milvus filters ------------------------------------------------------------------------------


def test_milvus_filters_are_built_from_integer_ids_and_fixed_kinds_only():
    assert (
        _filter([3, 7], ["chunk", "question"]) == 'kb in [3, 7] and kind in ["chunk", "question"]'
    )
    assert _filter([1], None) == "kb in [1]"
    with pytest.raises(ValueError):
        _filter(["1] or kb != [0"], None)  # a name where an id belongs cannot get in
    with pytest.raises(StoreError, match="Unknown vector kind"):
        _filter([1], ['chunk"] or kind != ["x'])


# --- archives (the task agent's workspace) -----------------------------------------------------


def _zip(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def test_a_zip_bomb_by_compression_ratio_is_refused_before_anything_is_written(tmp_path: Path):
    archive = _zip(tmp_path / "bomb.zip", {f"z{i}.bin": b"\0" * (4 * MiB) for i in range(4)})
    assert archive.stat().st_size * 500 < 16 * MiB  # a ratio of more than 500:1
    with pytest.raises(AccessError, match="unpacks to more than 10.0 MiB|unpacks to more than"):
        unpack_archive(archive, tmp_path / "ws", max_bytes=10 * MiB)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.zip"]


def test_a_zip_that_understates_its_sizes_is_refused(tmp_path: Path):
    archive = _zip(tmp_path / "liar.zip", {"big.txt": b"A" * 200_000})
    data = bytearray(archive.read_bytes())
    # Declare 10 bytes in the local header (offset 22) and the central directory (offset 24).
    struct.pack_into("<I", data, 22, 10)
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 10)
    archive.write_bytes(bytes(data))
    with pytest.raises(AccessError, match="liar.zip"):
        unpack_archive(archive, tmp_path / "ws", max_bytes=1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["liar.zip"]


@pytest.mark.parametrize(
    "name", ["..\\..\\evil.txt", "C:/Windows/evil.txt", "c:evil.txt", "a/../../evil.txt", "/x"]
)
def test_zip_entries_with_windows_style_traversal_are_refused(tmp_path: Path, name: str):
    archive = _zip(tmp_path / "t.zip", {"ok.txt": b"ok", name: b"evil"})
    with pytest.raises(AccessError, match="points outside the archive folder"):
        unpack_archive(archive, tmp_path / "out" / "ws")
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "evil.txt").exists()


# --- Markdown from documents -----------------------------------------------------------------


def test_inert_markdown_turns_images_and_links_into_text_and_keeps_everything_else():
    text = "see ![logo](http://evil.example/beacon.png) and ![ref][1] or [a link](https://x)"
    shown = inert(text)  # a word joiner (U+2060) breaks each; tests/test_inert_text.py has more
    assert "](" not in shown and "][" not in shown and shown.replace("\u2060", "") == text
    assert inert("<img src=x onerror=alert(1)>") == "<img src=x onerror=alert(1)>"  # Streamlit
    assert inert("普通 **文本**") == "普通 **文本**"  # shows HTML as text; bold renders


# --- API keys ------------------------------------------------------------------------------------

KEY = "sk-test-SECRET123456"


def _dump_catalog(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return "\n".join(conn.iterdump())


def test_the_api_key_reaches_no_log_error_stored_row_or_file(
    tmp_path: Path, embedder, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)  # every logger, httpx and openai included
    home = tmp_path / "home"
    doc = tmp_path / "sessions.md"
    doc.write_text(
        "# Sessions\n\nIdle sessions expire after 15 minutes. The session identifier is "
        "rotated at login.\n",
        encoding="utf-8",
    )
    messages: list[str] = []
    with FakeOpenAI() as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key=KEY)
        assert KEY not in repr(settings)
        options = {"max_attempts": 1, "backoff_s": 0.0, "timeout_s": 5.0}
        with KnowledgeService(settings, embedder=embedder, llm_options=options) as svc:
            svc.kbs.create("kb", mode="graph")
            report = svc.builds.add("kb", [doc])
            assert report.added == ["sessions.md"], report.to_json()
            messages.append(str(report.to_json()))
            result = svc.search.ask("How long may a session stay idle?", ["kb"])
            messages.append(str(result.answer.to_json()))
            # The fake quotes the bearer token back on 400 and 401, as careless servers do.
            for fault in ("401", "400", "500"):
                fake.fail(*[fault] * 4)
                try:
                    answer = svc.search.ask(f"What rotates at login? ({fault})", ["kb"])
                    messages.append(str(answer.answer.to_json()))
                except ZhixingError as exc:
                    messages.append(str(exc))
                fake.reset()
            fake.fail("401", "401")
            (tmp_path / "more.md").write_text("# More\n\nTokens rotate every 90 days.\n", "utf-8")
            messages.append(str(svc.builds.add("kb", [tmp_path / "more.md"]).to_json()))
            fake.reset()
        fake.fail("401", "401", "401")
        messages.extend(check_connection(settings).lines)
    assert any("401" in m for m in messages), messages  # the failures did happen
    assert not [m for m in messages if KEY in m]
    logged = [
        f"{r.name}: {r.getMessage()} {r.exc_text or ''}"
        for r in caplog.records
        if KEY in f"{r.getMessage()} {r.exc_text or ''} {r.args!r}"
    ]
    assert caplog.records and not logged
    assert KEY not in _dump_catalog(home / "catalog.db")
    leaked = [p for p in home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_the_settings_page_never_shows_the_api_key(app_home, monkeypatch, tmp_path: Path):
    from streamlit.testing.v1 import AppTest

    from zhixing.core.config import save_settings

    with FakeOpenAI() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        save_settings(app_home, {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake.url})
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
        at.run()
        at.switch_page("../pages/settings.py").run()
        assert not at.exception, at.exception
        shown = str(list(at.main)) + str(list(at.sidebar))
        assert "API" in shown and KEY not in shown
        assert all(w.value != KEY for w in at.text_input)
        fake.fail("401")
        next(b for b in at.button if "测试" in b.label).click().run()  # test connection
        assert not at.exception, at.exception
        assert at.error and "401" in at.error[0].value
        assert KEY not in str(list(at.main)) + str(list(at.sidebar))
