"""Two Zhixing homes on one Milvus server (a team's and a staging copy): each home's deployment
id names its collections, so a build, search, remove, delete or import in one never touches
the other's vectors, although both catalogs number their knowledge bases from 1."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from zhixing.core.config import Settings
from zhixing.core.service import Embedder, KnowledgeService

TEAM = "# Passwords\n\nPasswords are hashed with bcrypt at cost 12 before they are stored.\n"
STAGING = "# Transport\n\nEvery connection uses TLS 1.3; TLS 1.0 and 1.1 are switched off.\n"


def _documents(svc: KnowledgeService, query: str) -> set[str]:
    return {h.document for h in svc.search.query(query, ["rules"], top_k=5)}


def _deployment(home: Path) -> str:
    with sqlite3.connect(home / "catalog.db") as db:
        return db.execute("SELECT value FROM home WHERE key = 'deployment'").fetchone()[0]


def test_two_homes_on_one_server_never_change_each_other(
    tmp_path: Path,
    milvus_server: str,
    embedder,  # noqa: ANN001
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "team.md").write_text(TEAM, encoding="utf-8")
    (docs / "staging.md").write_text(STAGING, encoding="utf-8")
    homes = tmp_path / "team", tmp_path / "staging"
    team, staging = (
        KnowledgeService(Settings(home=h, milvus_uri=milvus_server), embedder=embedder)
        for h in homes
    )
    try:
        for svc, doc in ((team, "team.md"), (staging, "staging.md")):
            svc.kbs.create("rules")  # the same name, and the same id (1), in both catalogs
            assert svc.builds.add("rules", [docs / doc]).ok
        assert _deployment(homes[0]) != _deployment(homes[1])
        assert _documents(team, "TLS 1.3 bcrypt") == {"team.md"}
        assert _documents(staging, "TLS 1.3 bcrypt") == {"staging.md"}

        team.builds.remove("rules", "team.md")  # a delete by (kb, document) ids in one home ...
        assert _documents(staging, "TLS") == {"staging.md"}  # ... leaves the other's alone
        assert _documents(team, "bcrypt") == set()

        archive = tmp_path / "staging.zhixing"
        staging.kbs.export_archive("rules", archive)
        team.kbs.delete("rules")
        team.kbs.import_archive(archive)  # the copy lands in the team's collection only
        assert _documents(team, "TLS") == {"staging.md"}
        staging.kbs.delete("rules")
        assert _documents(team, "TLS") == {"staging.md"}  # the team's copy stays
    finally:
        team.close()
        staging.close()


def test_a_home_keeps_its_deployment_id_and_an_older_home_keeps_its_collections(
    tmp_path: Path, embedder: Embedder
) -> None:
    home = tmp_path / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        first = _deployment(home)
    with KnowledgeService(Settings(home=home), embedder=embedder):
        assert _deployment(home) == first and len(first) == 12 and first.isalnum()
    # A home whose knowledge bases predate deployment ids keeps the names it filled.
    old = tmp_path / "old"
    with KnowledgeService(Settings(home=old), embedder=embedder) as svc:
        svc.kbs.create("rules")
    with sqlite3.connect(old / "catalog.db") as db:
        db.execute("DELETE FROM home")
    with KnowledgeService(Settings(home=old), embedder=embedder) as svc:
        assert _deployment(old) == "" and svc._home.vectors.collection_name(512) == "zhixing_d512"
