"""A home whose catalog is on PostgreSQL (issue 38), end to end outside the build jobs: the
conversations' threads in the catalog's database, seen by a second process and by the sessions
of one; `zhixing health`, `serve` and `mcp` finding the catalog there; a backup of it restored
into SQLite and into another database; and a home moving from catalog.db to a team's server.

Real PostgreSQL (a throwaway cluster, tests/postgres_cluster.py), real SQLite, real Milvus Lite
in temp homes, the built-in embedder; offline (no model).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.command import run_python, zx
from zhixing.cli.serve import auth_configured
from zhixing.core.agents.checkpoints import close_checkpointer, open_checkpointer
from zhixing.core.backup import backup_home, restore_home
from zhixing.core.config import Settings
from zhixing.core.errors import StoreError
from zhixing.core.service import KnowledgeService, User
from zhixing.core.store import Catalog
from zhixing.core.store.catalog import catalog_exists
from zhixing.core.store.postgres import schema_objects

ALICE = User("alice", "viewer")
LEVELS = (
    "# Password rules\n\n## Level 2\n\nAt level 2 a password has at least 12 characters and is"
    " stored with bcrypt.\n\n## Level 3\n\nAt level 3 a password has at least 16 characters"
    " and sign-in needs a hardware key.\n"
)
SECURITY = (
    "# Web 安全规范\n\n## 跨站脚本\n\n跨站脚本（XSS）属于注入类漏洞。输出到 HTML 页面的数据必须进行"
    "上下文相关的编码。\n\n## SQL 注入\n\n应使用参数化查询防止 SQL注入。禁止拼接用户输入到 SQL 语句。\n"
)
QUERIES = ("level 2 password", "hardware key", "跨站脚本 如何防止", "SQL注入 参数化查询")
FIRST, FOLLOW_UP = "What does a level 2 password need?", "and for level 3?"
RESOLVED = "What does a level 3 password need?"
# A server that is not there: a socket folder no cluster listens in.
AWAY = "postgresql://zhixing@/nothing?host=/nonexistent-zhixing-socket-folder"


def _settings(home: Path, uri: str = "") -> Settings:
    knobs = {"embed_batch": 8, "parse_workers": 1, "chunk_units": 60, "chunk_overlap_units": 0}
    return Settings(home=home, catalog_uri=uri, **knobs)  # type: ignore[arg-type]


def _build(settings: Settings, docs: Path, embedder: Any) -> str:
    """Two knowledge bases, two users, alice's conversation of one turn and her notebook;
    the conversation's id."""
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "levels.md").write_text(LEVELS, encoding="utf-8")
    (docs / "web.md").write_text(SECURITY, encoding="utf-8")
    with KnowledgeService(settings, embedder=embedder) as svc:
        svc.kbs.create("rules")
        svc.builds.add("rules", [docs / "levels.md"])
        svc.kbs.create("安全", tags=["web"])
        svc.builds.add("安全", [docs / "web.md"])
        svc.users.add("alice", "viewer", "alice-password")
        svc.users.add("bob", "editor", "bob-password")
        alice = svc.as_user(ALICE)
        talk = alice.conversations.new()
        alice.search.ask(FIRST, ["rules"], conversation=talk.id)
        cell = alice.notebooks.add_cell(alice.notebooks.for_kbs(["rules"]).id, "level 3")
        alice.notebooks.run_cell(cell.id)
        return talk.id


def state(settings: Settings, embedder: Any) -> dict[str, Any]:
    """What a home holds that a user sees, by content."""
    with KnowledgeService(settings, embedder=embedder) as svc:
        alice = svc.as_user(ALICE)
        return {
            "kbs": {
                o.kb.name: (o.kb.mode, o.kb.tags, o.documents, o.chunks) for o in svc.kbs.overview()
            },
            "documents": {
                o.kb.name: sorted(
                    (d.source, d.status, d.chunks) for d in svc.kbs.documents(o.kb.name)
                )
                for o in svc.kbs.overview()
            },
            "users": sorted((u.name, u.role, bool(u.password_hash)) for u in svc.users.all()),
            "conversations": [
                (c.id, [t.question for t in alice.conversations.turns(c.id)[0]])
                for c in alice.conversations.all()
            ],
            "notebook": [
                (c.question, bool(c.result)) for c in alice.notebooks.for_kbs(["rules"]).cells
            ],
            "hits": [
                [(h.document, h.text) for h in svc.search.query(q, None, top_k=4)] for q in QUERIES
            ],
            "audit": [(e.action, e.target) for e in svc.admin.audit_log()],
        }


def turns(target: Path | str, thread: str) -> list[str]:
    """The questions a conversation's LangGraph thread remembers, read from its checkpointer."""
    saver = open_checkpointer(target)
    try:
        latest = saver.get_tuple({"configurable": {"thread_id": thread}})
        assert latest is not None, f"no thread {thread} in {target}"
        return [t["question"] for t in latest.checkpoint["channel_values"]["turns"]]
    finally:
        close_checkpointer(saver)


def _plan(result: Any) -> dict[str, Any]:
    return next(e for e in result.events if e["node"] == "plan")


@pytest.fixture(scope="module")
def pg_home(tmp_path_factory, postgres_cluster, embedder) -> dict[str, Any]:
    """A home whose catalog is a database of the throwaway cluster (left as built: tests that
    ask on it build their own)."""
    root = tmp_path_factory.mktemp("pg-home")
    settings = _settings(root / "home", postgres_cluster.new_database())
    talk = _build(settings, root / "docs", embedder)
    return {"settings": settings, "talk": talk, "state": state(settings, embedder)}


# --- conversations ------------------------------------------------------------------------


def test_the_threads_live_in_the_catalogs_database_and_the_home_holds_neither_database(pg_home):
    settings = pg_home["settings"]
    assert turns(settings.catalog_uri, pg_home["talk"]) == [FIRST]
    left = sorted(p.name for p in settings.home.iterdir())
    assert "catalog.db" not in left and "conversations.sqlite" not in left, left
    tables = {name for kind, name in schema_objects(settings.catalog_uri) if kind == "table"}
    assert {"knowledge_bases", "chunks", "runs", "checkpoints", "checkpoint_blobs"} <= tables


@pytest.mark.process
@pytest.mark.slow
def test_a_second_process_on_the_database_continues_a_conversation_the_first_began(
    tmp_path, postgres_cluster, embedder
):
    settings = _settings(tmp_path / "home", postgres_cluster.new_database())
    talk = _build(settings, tmp_path / "docs", embedder)
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from zhixing.core.config import Settings\n"
        "from zhixing.core.service import KnowledgeService, User\n"
        "settings = Settings(home=Path(sys.argv[1]), catalog_uri=sys.argv[2])\n"
        "with KnowledgeService(settings) as svc:\n"
        "    alice = svc.as_user(User('alice', 'viewer'))\n"
        "    result = alice.search.ask(sys.argv[4], ['rules'], conversation=sys.argv[3])\n"
        "    plan = next(e for e in result.events if e['node'] == 'plan')\n"
        "    print(json.dumps({'resolved': plan.get('resolved')}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    # This process holds the home's Milvus Lite file, as the app does; the other one joins it.
    with KnowledgeService(settings, embedder=embedder) as first:
        ran = run_python(
            "-c", script, str(settings.home), settings.catalog_uri, talk, FOLLOW_UP,
            env=env, timeout=300,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout.splitlines()[-1])["resolved"] == RESOLVED
        # ... and this process sees the turn the other one added, in its run log and thread.
        alice = first.as_user(ALICE)
        assert [t.question for t in alice.conversations.turns(talk)[0]] == [FIRST, FOLLOW_UP]
        alice.search.ask("and for level 2?", ["rules"], conversation=talk)
    assert turns(settings.catalog_uri, talk) == [FIRST, FOLLOW_UP, "and for level 2?"]


def test_the_sessions_of_one_process_ask_at_once_each_on_its_own_thread(
    tmp_path, postgres_cluster, embedder
):
    settings = _settings(tmp_path / "home", postgres_cluster.new_database())
    _build(settings, tmp_path / "docs", embedder)
    questions = [f"level {n} password" for n in (2, 3, 2, 3, 2, 3)]
    errors: list[BaseException] = []
    with KnowledgeService(settings, embedder=embedder) as svc:
        alice = svc.as_user(ALICE)
        talks = [alice.conversations.new().id for _ in questions]

        def ask(talk: str, question: str) -> None:
            try:
                alice.search.ask(question, ["rules"], conversation=talk)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        sessions = [
            threading.Thread(target=ask, args=pair) for pair in zip(talks, questions, strict=True)
        ]
        for session in sessions:
            session.start()
        for session in sessions:
            session.join()
    assert not errors, errors
    assert [turns(settings.catalog_uri, t) for t in talks] == [[q] for q in questions]


# --- the commands that look for the catalog -------------------------------------------------


def _health(home: Path, uri: str, *skip: str) -> dict[str, Any]:
    flags = [f"--skip={part}" for part in ("llm", *skip)]
    ran = zx(home, "health", "--json", *flags, check=False, env={"ZHIXING_CATALOG_URI": uri})
    report: dict[str, Any] = json.loads(ran.stdout)
    assert ran.returncode == (0 if report["healthy"] else 1), ran.stderr
    return report


def test_health_checks_the_catalog_on_postgres_with_the_same_json(
    pg_home, postgres_cluster, tmp_path
):
    settings = pg_home["settings"]
    ok = _health(settings.home, settings.catalog_uri)
    assert ok["healthy"] and set(ok["checks"]) == {"catalog", "vectors", "llm"}
    catalog = ok["checks"]["catalog"]
    assert set(catalog) == {"status", "message", "seconds"} and catalog["status"] == "ok"
    assert "answers" in catalog["message"] and ok["checks"]["vectors"]["status"] == "ok"
    empty = _health(tmp_path, postgres_cluster.new_database(), "vectors")["checks"]["catalog"]
    assert empty["status"] == "failing" and "holds no Zhixing catalog" in empty["message"]
    away = _health(tmp_path, AWAY, "vectors")["checks"]["catalog"]
    assert away["status"] == "failing" and "cannot be opened" in away["message"]
    assert away["seconds"] < 10


def test_serve_mcp_and_backup_find_the_home_and_its_logins_in_postgres(
    pg_home, postgres_cluster, tmp_path
):
    uri = pg_home["settings"].catalog_uri
    # The folder holds nothing: users and tokens are in the database.
    assert auth_configured(_settings(tmp_path / "elsewhere", uri), secrets_files=[]) == "builtin"
    listed = zx(tmp_path / "elsewhere", "token", "list", env={"ZHIXING_CATALOG_URI": uri})
    assert listed.returncode == 0, listed.stderr
    empty = postgres_cluster.new_database()
    assert auth_configured(_settings(tmp_path / "new", empty), secrets_files=[]) == ""
    env_empty = {"ZHIXING_CATALOG_URI": empty}
    refused = zx(tmp_path / "new", "mcp", check=False, env=env_empty)
    assert refused.returncode == 1 and "holds no Zhixing catalog yet" in refused.stderr
    assert refused.stderr.count(". ") == 0 and not catalog_exists(empty)
    nothing = zx(tmp_path / "new", "backup", str(tmp_path / "x.zip"), check=False, env=env_empty)
    assert nothing.returncode == 1 and "holds no Zhixing catalog to back up" in nothing.stderr
    assert not (tmp_path / "x.zip").exists() and not catalog_exists(empty)
    away = zx(tmp_path / "new", "token", "list", check=False, env={"ZHIXING_CATALOG_URI": AWAY})
    assert away.returncode == 1 and "cannot be opened" in away.stderr
    assert away.stderr.strip().count("\n") == 0
    with pytest.raises(StoreError, match="check ZHIXING_CATALOG_URI"):
        auth_configured(_settings(tmp_path / "new", AWAY), secrets_files=[])


# --- backup and restore -----------------------------------------------------------------


def test_a_postgres_home_backs_up_to_one_format_and_restores_into_sqlite_the_same(
    pg_home, tmp_path, embedder
):
    archive = tmp_path / "home.zip"
    settings = pg_home["settings"]
    env = {"ZHIXING_CATALOG_URI": settings.catalog_uri}
    backup = json.loads(zx(settings.home, "backup", str(archive), "--json", env=env).stdout)
    assert backup["vectors"] and set(backup["knowledge_bases"]) == {"rules", "安全"}
    assert backup["users"] == 2
    new = _settings(tmp_path / "new")
    restored = restore_home(new, archive, embedder=embedder)
    assert all(c["embedded"] == 0 < c["vectors"] for c in restored.knowledge_bases.values())
    assert state(new, embedder) == pg_home["state"]
    assert turns(new.home / "conversations.sqlite", pg_home["talk"]) == [FIRST]
    with KnowledgeService(new, embedder=embedder) as svc:
        follow = svc.as_user(ALICE).search.ask(FOLLOW_UP, ["rules"], conversation=pg_home["talk"])
    assert _plan(follow)["resolved"] == RESOLVED


def test_a_restore_into_another_database_gives_the_same_home_and_goes_on_from_it(
    pg_home, postgres_cluster, tmp_path, embedder
):
    archive = tmp_path / "home.zip"
    backup_home(pg_home["settings"], archive)
    target = postgres_cluster.new_database()
    ran = zx(
        tmp_path, "restore", str(archive), "--home", str(tmp_path / "new"), "--catalog", target
    )
    assert ran.returncode == 0, ran.stderr
    assert "in PostgreSQL" in ran.stdout and "copying the catalog into PostgreSQL" in ran.stderr
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["milvus.db"]
    new = _settings(tmp_path / "new", target)
    assert state(new, embedder) == pg_home["state"]
    with KnowledgeService(new, embedder=embedder) as svc:
        follow = svc.as_user(ALICE).search.ask(FOLLOW_UP, ["rules"], conversation=pg_home["talk"])
        assert _plan(follow)["resolved"] == RESOLVED
        svc.kbs.create("later")  # the copied ids left every counter past them
        assert svc.builds.add("later", [_doc(tmp_path, "later.md", LEVELS)]).chunks > 0
    assert turns(target, pg_home["talk"]) == [FIRST, FOLLOW_UP]
    with (
        closing(Catalog(pg_home["settings"].catalog_uri)) as source,
        closing(Catalog(target)) as copy,
    ):
        assert copy.deployment() not in ("", source.deployment())


def _doc(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_restore_refuses_a_database_that_holds_tables_and_leaves_it_as_it_was(
    pg_home, postgres_cluster, tmp_path
):
    archive = tmp_path / "home.zip"
    backup_home(pg_home["settings"], archive)
    busy = postgres_cluster.new_database()
    with psycopg.connect(busy, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    ran = zx(
        tmp_path,
        "restore",
        str(archive),
        "--home",
        str(tmp_path / "new"),
        "--catalog",
        busy,
        check=False,
    )
    assert ran.returncode == 1 and "already holds tables" in ran.stderr
    assert ran.stderr.count(". ") == 0 and not (tmp_path / "new").exists()
    with psycopg.connect(busy) as conn:
        assert conn.execute("SELECT text FROM notes").fetchall() == [("mine",)]
    assert {name for _, name in schema_objects(busy)} == {"notes"}


# --- a home moving from catalog.db to a team's server ---------------------------------------


@pytest.fixture(scope="module")
def sqlite_home(tmp_path_factory, embedder) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("sqlite-home")
    settings = _settings(root / "home")
    talk = _build(settings, root / "docs", embedder)
    return {"settings": settings, "talk": talk, "state": state(settings, embedder)}


def _search(home: Path, uri: str = "") -> list[Any]:
    env = {"ZHIXING_CATALOG_URI": uri} if uri else None
    return [
        json.loads(zx(home, "search", "--all", q, "--json", env=env).stdout)["hits"]
        for q in QUERIES
    ]


def test_a_home_moves_to_postgres_by_a_backup_and_a_restore_and_answers_the_same(
    sqlite_home, postgres_cluster, tmp_path, embedder
):
    old = sqlite_home["settings"]
    archive = tmp_path / "home.zip"
    zx(old.home, "backup", str(archive))
    uri = postgres_cluster.new_database()
    zx(
        tmp_path,
        "restore",
        str(archive),
        "--home",
        str(tmp_path / "team"),
        env={"ZHIXING_CATALOG_URI": uri},
    )
    team = _settings(tmp_path / "team", uri)
    assert state(team, embedder) == sqlite_home["state"]
    assert _search(team.home, uri) == _search(old.home)
    assert _health(team.home, uri)["healthy"]
    assert turns(uri, sqlite_home["talk"]) == [FIRST]


def test_a_restore_that_fails_in_the_database_drops_what_it_made_there(
    sqlite_home, postgres_cluster, tmp_path, embedder
):
    home = tmp_path / "home"
    shutil.copytree(sqlite_home["settings"].home, home)
    with sqlite3.connect(home / "catalog.db") as conn:  # SQLite keeps a NUL; Postgres refuses it
        conn.execute("UPDATE audit SET detail = 'before' || char(0) || 'after'")
    archive = tmp_path / "home.zip"
    backup_home(_settings(home), archive)
    target = postgres_cluster.new_database()
    before = schema_objects(target)
    with pytest.raises(StoreError, match="cannot be copied") as caught:
        restore_home(_settings(tmp_path / "new", target), archive, embedder=embedder)
    assert str(caught.value).count(". ") == 0
    assert schema_objects(target) == before and not any(k == "table" for k, _ in before)
    assert not (tmp_path / "new").exists()
    assert not [p for p in tmp_path.iterdir() if ".restoring-" in p.name]


def test_copied_ids_are_never_given_again_on_either_engine(postgres_cluster, tmp_path):
    from zhixing.core.backup.catalog_copy import copy_catalog

    with closing(Catalog(tmp_path / "catalog.db")) as catalog:
        ids = [catalog.create_kb(name).id for name in ("a", "b", "c")]
        catalog.delete_kb(ids[-1])  # the highest id goes; it is never given again
    uri = postgres_cluster.new_database()
    assert copy_catalog(tmp_path / "catalog.db", uri)["knowledge_bases"] == 2
    with closing(Catalog(uri)) as catalog:
        assert catalog.create_kb("d").id == ids[-1] + 1
        catalog.delete_kb(ids[-1] + 1)
    copy_catalog(uri, tmp_path / "back.db")
    with closing(Catalog(tmp_path / "back.db")) as catalog:
        assert [kb.name for kb in catalog.list_kbs()] == ["a", "b"]
        assert catalog.create_kb("e").id == ids[-1] + 2
