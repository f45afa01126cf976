"""A whole home backed up and restored (`zhixing backup` / `restore`), for real: SQLite and Milvus
Lite in temp homes, the built-in embedder, users, a conversation, a notebook, two knowledge
bases (one a graph with generated questions), and a build running while the backup is taken."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.command import zx
from tests.fakes import FakeOpenAI
from zhixing.core.backup import backup_home, restore_home
from zhixing.core.build.background import BuildJobs
from zhixing.core.build.durable import this_process
from zhixing.core.config import Settings, save_settings
from zhixing.core.errors import NotFoundError, ParseError
from zhixing.core.service import KnowledgeService, User

SECRET = "sk-test-Zx9secretKEY-do-not-leak-0042"
ALICE = User("alice", "viewer")
QUERIES = ("跨站脚本 如何防止", "How is CSRF prevented?", "SQL注入 参数化查询", "level 2 password")
SECURITY = {
    "web-security.md": "# Web 安全规范\n\n## 跨站脚本\n\n跨站脚本（XSS）属于注入类漏洞。输出到 HTML"
    " 页面的数据必须进行上下文相关的编码。CWE-79 描述了跨站脚本漏洞。\n\n## SQL 注入\n\n"
    "SQL注入属于注入类漏洞。应使用参数化查询防止 SQL注入。禁止拼接用户输入到 SQL 语句。\n",
    "csrf.txt": "Cross-site request forgery (CSRF) abuses a logged-in session.\nSynchronizer"
    " tokens prevent CSRF. SameSite cookies prevent CSRF.\n",
}
RULES = {
    "levels.md": "# Password rules\n\n## Level 2\n\nAt level 2 a password has at least 12"
    " characters and is stored with bcrypt.\n\n## Level 3\n\nAt level 3 a password has at least"
    " 16 characters and sign-in needs a hardware key.\n",
}


def _settings(home: Path, **overrides: Any) -> Settings:
    knobs = {"embed_batch": 8, "parse_workers": 1, "chunk_units": 60, "chunk_overlap_units": 0}
    return Settings(home=home, **(knobs | overrides))


def _write(folder: Path, docs: dict[str, str]) -> list[Path]:
    folder.mkdir(parents=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(folder.iterdir())


def state(home: Path, embedder: Any) -> dict[str, Any]:
    """What a home holds that a user sees, by content: knowledge bases and their documents,
    users, alice's conversations and notebook, and the search results of every query."""
    with KnowledgeService(_settings(home), embedder=embedder) as svc:
        alice = svc.as_user(ALICE)
        conversations = alice.conversations.all()
        notebook = alice.notebooks.for_kbs(["rules"])
        return {
            "kbs": {
                kb.kb.name: (kb.kb.mode, kb.kb.tags, kb.documents, kb.chunks)
                for kb in svc.kbs.overview()
            },
            "documents": {
                kb.kb.name: sorted(
                    (d.source, d.status, d.chunks) for d in svc.kbs.documents(kb.kb.name)
                )
                for kb in svc.kbs.overview()
            },
            "users": sorted((u.name, u.role, bool(u.password_hash)) for u in svc.users.all()),
            "conversations": [
                (c.title, [t.question for t in alice.conversations.turns(c.id)[0]])
                for c in conversations
            ],
            "notebook": [(c.question, c.mode, bool(c.result)) for c in notebook.cells],
            "hits": {
                name: [
                    [(h.document, h.text) for h in svc.search.query(q, [name], top_k=5)]
                    for q in QUERIES
                ]
                for name in ("安全", "rules")
            },
            "audit": [(e.action, e.target) for e in svc.admin.audit_log()],
        }


def threads(home: Path) -> list[str]:
    """The LangGraph threads kept in a home's checkpoints."""
    with sqlite3.connect(home / "conversations.sqlite") as conn:
        return sorted(r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints"))


@pytest.fixture(scope="module")
def source(tmp_path_factory, embedder) -> dict[str, Any]:
    """A home with two knowledge bases, two users, alice's conversation and notebook, and saved
    settings that hold an API key and a base URL with a password in it."""
    root = tmp_path_factory.mktemp("home-backup")
    home = root / "home"
    security, rules = _write(root / "security", SECURITY), _write(root / "rules", RULES)
    with (
        FakeOpenAI() as fake,
        KnowledgeService(
            _settings(home, openai_base_url=fake.url, openai_api_key="sk-test"),
            embedder=embedder,
            llm_options={"timeout_s": 2.0, "max_attempts": 3, "backoff_s": 0.01},
        ) as svc,
    ):
        svc.kbs.create("安全", mode="graph", tags=["web"])
        assert svc.builds.add("安全", security).questions  # questions have vectors too
    with KnowledgeService(_settings(home), embedder=embedder) as svc:
        svc.kbs.create("rules")
        svc.builds.add("rules", rules)
        svc.users.add("alice", "viewer", "alice-password")
        svc.users.add("bob", "editor", "bob-password")
        alice = svc.as_user(ALICE)
        talk = alice.conversations.new()
        alice.search.ask("What does a level 2 password need?", ["rules"], conversation=talk.id)
        notebook = alice.notebooks.for_kbs(["rules"])
        cell = alice.notebooks.add_cell(notebook.id, "level 3 password", mode="search")
        alice.notebooks.run_cell(cell.id)
    save_settings(
        home,
        {
            "OPENAI_API_KEY": SECRET,
            "OPENAI_BASE_URL": "http://user:hunter2pass@127.0.0.1:9/v1",
            "ZHIXING_CHAT_MODEL": "qwen-test",
        },
    )
    return {"root": root, "home": home, "state": state(home, embedder)}


def test_the_fixture_home_holds_every_kind_of_thing(source):
    before = source["state"]
    assert set(before["kbs"]) == {"安全", "rules"} and len(before["users"]) == 2
    assert before["conversations"][0][1] == ["What does a level 2 password need?"]
    assert before["notebook"] == [("level 3 password", "search", True)]
    assert all(any(hits) for hits in before["hits"].values())
    assert threads(source["home"])


def test_an_idle_home_restores_whole_with_its_vectors_and_the_same_search_results(
    source, tmp_path, embedder
):
    archive = tmp_path / "home.zip"
    backup = backup_home(_settings(source["home"]), archive)
    assert backup.vectors and not backup.notes  # nothing held the Lite file: vectors copied
    restored = restore_home(_settings(tmp_path / "new"), archive, embedder=embedder)
    assert all(c["embedded"] == 0 and c["vectors"] > 0 for c in restored.knowledge_bases.values())
    assert state(tmp_path / "new", embedder) == source["state"]
    assert threads(tmp_path / "new") == threads(source["home"])
    with KnowledgeService(_settings(tmp_path / "new"), embedder=embedder) as svc:
        assert svc.users.sign_in("alice", "alice-password").role == "viewer"
    assert _deployment(tmp_path / "new") not in ("", _deployment(source["home"]))


def _deployment(home: Path) -> str:
    with sqlite3.connect(home / "catalog.db") as conn:
        return str(conn.execute("SELECT value FROM home WHERE key = 'deployment'").fetchone()[0])


def test_a_backup_while_the_app_holds_the_home_copies_its_vectors_through_the_app(
    source, tmp_path, embedder
):
    archive = tmp_path / "home.zip"
    with KnowledgeService(_settings(source["home"]), embedder=embedder):  # the app, serving
        ran = zx(source["home"], "backup", str(archive))
    assert ran.returncode == 0, ran.stderr
    # The app serves its Milvus Lite file to the backup (core/store/lite_share.py).
    assert "embeds them again" not in ran.stdout and "backup: vectors" in ran.stderr
    ran = zx(tmp_path, "restore", str(archive), "--home", str(tmp_path / "new"), "--json")
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert summary["vectors"] is True
    assert all(c["embedded"] == 0 < c["vectors"] for c in summary["knowledge_bases"].values())
    assert state(tmp_path / "new", embedder) == source["state"]


def test_a_file_held_by_a_program_that_does_not_share_it_is_embedded_again(
    source, tmp_path, embedder
):
    archive = tmp_path / "home.zip"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pymilvus import MilvusClient; MilvusClient(sys.argv[1]);"
            " print('ready', flush=True); time.sleep(120)",
            str(source["home"] / "milvus.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        ran = zx(source["home"], "backup", str(archive))
    finally:
        holder.kill()
        holder.wait()
    assert ran.returncode == 0, ran.stderr
    assert "the restore embeds them again" in ran.stdout and "backup: catalog" in ran.stderr
    ran = zx(tmp_path, "restore", str(archive), "--home", str(tmp_path / "new"), "--json")
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert summary["vectors"] is False
    assert all(c["embedded"] == c["vectors"] > 0 for c in summary["knowledge_bases"].values())
    assert state(tmp_path / "new", embedder) == source["state"]


def test_a_backup_holds_no_api_key_and_says_which_settings_it_kept(source, tmp_path):
    archive = tmp_path / "home.zip"
    summary = backup_home(_settings(source["home"]), archive)
    assert summary.settings == ["OPENAI_BASE_URL", "ZHIXING_CHAT_MODEL"]
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            data = zf.read(name)
            assert SECRET.encode() not in data and b"hunter2pass" not in data, name
        kept = json.loads(zf.read("settings.json"))
    assert kept == {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ZHIXING_CHAT_MODEL": "qwen-test"}


def test_restore_refuses_a_home_that_holds_anything_and_leaves_it_as_it_was(source, tmp_path):
    archive = tmp_path / "home.zip"
    backup_home(_settings(source["home"]), archive)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine", encoding="utf-8")
    ran = zx(tmp_path, "restore", str(archive), "--home", str(busy), check=False)
    assert ran.returncode == 1 and "is not an empty folder" in ran.stderr
    assert ran.stderr.count(". ") == 0 and [p.name for p in busy.iterdir()] == ["notes.txt"]


def _tampered(archive: Path, out: Path) -> Path:
    """The archive with one byte of its catalog changed, and its manifest kept."""
    with zipfile.ZipFile(archive) as zf, zipfile.ZipFile(out, "w") as bad:
        for info in zf.infolist():
            data = zf.read(info)
            if info.filename == "catalog.db":
                data = data[:200] + bytes([data[200] ^ 0xFF]) + data[201:]
            bad.writestr(info, data)
    return out


def test_a_corrupt_or_foreign_archive_is_one_sentence_and_leaves_no_home(
    source, tmp_path, embedder
):
    archive = tmp_path / "home.zip"
    backup_home(_settings(source["home"]), archive)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with KnowledgeService(_settings(source["home"]), embedder=embedder) as svc:
        svc.kbs.export_archive("rules", tmp_path / "rules.zip")
    cases = {
        truncated: "not a Zhixing home backup",
        tmp_path / "rules.zip": "use `zhixing import`",
        _tampered(archive, tmp_path / "tampered.zip"): "does not match its checksum",
    }
    for bad, sentence in cases.items():
        target = tmp_path / f"new-{bad.stem}"
        with pytest.raises(ParseError, match=sentence):
            restore_home(_settings(target), bad, embedder=embedder)
        assert not target.exists()
        assert not [p for p in tmp_path.iterdir() if ".restoring-" in p.name]


def test_a_restore_into_a_home_with_its_own_log_folder_is_allowed(source, tmp_path, embedder):
    archive = tmp_path / "home.zip"
    backup_home(_settings(source["home"]), archive)
    (tmp_path / "new" / "logs").mkdir(parents=True)  # the command's debug log, made first
    ran = zx(tmp_path / "new", "restore", str(archive))
    assert ran.returncode == 0, ran.stderr
    assert "Restored" in ran.stdout and (tmp_path / "new" / "catalog.db").is_file()


def test_a_backup_never_overwrites_with_a_half_file_when_the_home_is_missing(tmp_path):
    with pytest.raises(NotFoundError, match="no Zhixing home"):
        backup_home(_settings(tmp_path / "nothing"), tmp_path / "x.zip")
    assert not list(tmp_path.iterdir())


# --- a backup taken while a build runs ---------------------------------------------------------


def _indexed(home: Path, kb: str) -> set[str]:
    """The documents the catalog says are indexed, read beside the build (its own connection)."""
    with sqlite3.connect(home / "catalog.db", timeout=30) as conn:
        rows = conn.execute(
            "SELECT d.source FROM documents d JOIN knowledge_bases k ON k.id = d.kb_id"
            " WHERE k.name = ? AND d.status = 'indexed'",
            (kb,),
        )
        return {r[0] for r in rows}


@pytest.mark.slow
def test_a_backup_taken_while_a_build_runs_restores_whole_documents_and_resumes(
    source, tmp_path, embedder
):
    home = tmp_path / "home"
    shutil.copytree(source["home"], home)
    (home / "settings.json").unlink()  # its endpoint is a dead address: the resume runs offline
    corpus = {
        f"topic-{n:02d}.md": f"# Topic {n}\n\n"
        + "".join(
            f"## Part {p}\n\nTopic {n} part {p}: term{n}x{p} 知识 条目 {n * p}.\n\n"
            for p in range(8)
        )
        for n in range(24)
    }
    paths = _write(tmp_path / "corpus", corpus)
    errors: list[BaseException] = []

    def build() -> None:
        try:
            with KnowledgeService(_settings(home, embed_batch=4), embedder=embedder) as svc:
                svc.kbs.create("big")
                svc.builds.add("big", paths)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    builder = threading.Thread(target=build)
    builder.start()
    deadline = time.monotonic() + 120
    while not _indexed(home, "big") and time.monotonic() < deadline:
        time.sleep(0.05)
    before = _indexed(home, "big")
    archive = tmp_path / "home.zip"
    # This process's build holds the Lite file and serves it to the backup.
    backup = backup_home(_settings(home), archive)
    after = _indexed(home, "big")
    builder.join()
    assert not errors, errors
    assert backup.vectors and not backup.notes
    caught = backup.knowledge_bases["big"]
    assert 0 < caught["documents"] < len(corpus), "the backup did not land during the build"

    restored = restore_home(_settings(tmp_path / "new"), archive, embedder=embedder)
    with KnowledgeService(_settings(tmp_path / "new"), embedder=embedder) as svc:
        docs = svc.kbs.documents("big")
        kept = {d.source for d in docs}
        assert before <= kept <= after and {d.status for d in docs} == {"indexed"}
        kb = svc.kbs.get("big")
        chunks = sum(d.chunks for d in docs)
        assert svc._home.vectors.count(kb.dimension, kb=kb.id, kind="chunk") == chunks
        hits = svc.search.query("term3x2 知识", ["big"], top_k=20)
        assert {h.document for h in hits} <= kept
        jobs = svc._home.catalog.jobs.all(kb.id)
    assert restored.knowledge_bases["big"]["documents"] == len(kept)
    others = state(tmp_path / "new", embedder)
    assert others["hits"] == source["state"]["hits"] and others["users"] == source["state"]["users"]
    assert others["conversations"] == source["state"]["conversations"]
    if len(kept) < len(corpus):  # the build the backup caught is there to finish
        assert [j["status"] for j in jobs] == ["interrupted"]
        ran = zx(tmp_path / "new", "resume", "big")
        assert ran.returncode == 0, ran.stderr
        assert _indexed(tmp_path / "new", "big") == set(corpus)


def test_a_restored_home_finishes_an_interrupted_build_from_the_uploads_the_backup_kept(
    tmp_path, embedder
):
    home, new = tmp_path / "home", tmp_path / "new"
    folder = "abc123def456"  # how the app names a job's upload folder
    notes = {f"note-{i}.md": f"# Note {i}\n\nUpload {i} waits for its build.\n" for i in range(3)}
    with KnowledgeService(_settings(home), embedder=embedder) as svc:
        kb = svc.kbs.create("uploaded")
        paths = _write(home / "uploads" / folder, notes)
        dead = subprocess.Popen(["true"])
        dead.wait()
        # What a kill of the app leaves: a running job of a gone process, its uploads staged.
        svc._home.catalog.jobs.claim(
            kb.id,
            total=len(paths),
            paths=[str(p) for p in paths],
            staging=str(home / "uploads" / folder),
            owner=(dead.pid, "", this_process().host),
            alive=lambda row: False,
        )
    archive = tmp_path / "home.zip"
    backup_home(_settings(home), archive)
    shutil.rmtree(home)  # the machine is gone: the backup is all there is
    restore_home(_settings(new), archive, embedder=embedder)
    with KnowledgeService(_settings(new), embedder=embedder) as svc:
        jobs = BuildJobs()
        [view] = jobs.resume_interrupted(svc.builds)
        done = jobs.wait(view.id, 120)
        assert done.state == "done", done.error
        docs = svc.kbs.documents("uploaded")
        assert sorted(d.source for d in docs) == sorted(notes)
        assert {d.status for d in docs} == {"indexed"}
        assert svc._home.catalog.jobs.staged(folder) == []  # ended: the kept copy goes
    assert not (new / "uploads" / folder).exists()
