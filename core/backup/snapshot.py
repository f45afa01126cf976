"""A whole home backed up while it serves (docs/architecture.md §9 `backup`): what goes in, and
how it stays consistent.

The catalog (knowledge bases, documents, chunks, the graph, build jobs, users and members, the
audit log, conversations' runs, notebooks, the LLM cache) is copied with SQLite's online backup
API in one step, which reads one snapshot while the app and a build go on writing (WAL: no
writer waits). The agents' checkpoints (`conversations.sqlite`) are copied the same way. A
catalog on PostgreSQL goes into the same SQLite member, every table read in one REPEATABLE READ
snapshot, and its threads into the same conversations member (catalog_copy.py): one format. The
settings go in without secrets: the saved settings less `OPENAI_API_KEY`, and the base URL
without any `user:password@`.

The vectors all derive from the catalog (core/backup/derived.py). Where the vector store can be
opened (a Milvus server, or a Lite file no process holds) the vectors the snapshot implies are
copied too, so a restore writes them as they are; where a process holds the Lite file (the
app, a build) they are left out, and the restore embeds them again from the snapshot. Either
way the backup holds exactly the snapshot: documents a build had not finished are in it as the
catalog had them (`chunked`), and the restore rolls them back (core/backup/restore.py).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..build.durable import keep_uploads
from ..build.run import LEFT
from ..choices import DocumentState, JobState
from ..config import SETTINGS_FILE, Settings, load_saved
from ..errors import NotFoundError, StoreError, ZhixingError
from ..home import private_dir, tighten
from ..llm.retry import public_url
from ..store import Catalog, VectorStore
from ..store.catalog import catalog_exists
from ..store.graph import GraphStore
from ..store.users import UserStore
from ..store.vectors import indexed_text, lite_in_use, primary_key
from .bundle import HOME_FORMAT, HOME_FORMAT_VERSION, write_bundle
from .catalog_copy import copy_catalog, copy_conversations
from .derived import derived_vectors

__all__ = ["HomeBackup", "Progress", "backup_home", "copy_sqlite"]

Progress = Callable[[str, int, int], None]  # (what, done, total)
# Settings a backup never holds (docs/architecture.md §10): the key, whoever may read the file.
_SECRET_KEYS = ("OPENAI_API_KEY",)
_FETCH_BATCH = 1000


@dataclass(frozen=True)
class HomeBackup:
    """What a backup holds (`backup --json`), or what a restore restored (`restore --json`)."""

    file: str
    home: str
    knowledge_bases: dict[str, dict[str, int]]  # name -> documents, in_progress, vectors
    users: int
    vectors: bool  # the vectors are in the backup (else the restore embeds them again)
    settings: list[str]  # the settings kept, by name
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "home": self.home,
            "knowledge_bases": self.knowledge_bases,
            "users": self.users,
            "vectors": self.vectors,
            "settings": self.settings,
            "seconds": round(self.seconds, 2),
            "notes": self.notes,
        }


def backup_home(settings: Settings, path: Path, progress: Progress | None = None) -> HomeBackup:
    """Back the home of `settings` up to the file `path`, while it may be serving."""
    started = time.perf_counter()
    say = progress or (lambda what, done, total: None)
    path = Path(path)
    if not catalog_exists(settings.catalog_target):
        if settings.catalog_on_postgres:
            raise NotFoundError(
                "The PostgreSQL database of ZHIXING_CATALOG_URI holds no Zhixing catalog to back"
                " up; check the URI."
            )
        raise NotFoundError(f"There is no Zhixing home at {settings.home} to back up.")
    if not path.parent.is_dir():
        raise StoreError(f"{path.parent} is not a folder; the backup cannot be written there.")
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        private_dir(work)
        say("catalog", 0, 1)
        members = _copy_catalog(settings, work)
        say("catalog", 1, 1)
        kept = _write_settings(settings.home, work / SETTINGS_FILE)
        if kept:
            members["settings.json"] = work / SETTINGS_FILE
        kbs, users, vectors, notes = _vectors(settings, work, members, say)
        manifest = {
            "format": HOME_FORMAT,
            "version": HOME_FORMAT_VERSION,
            "created_at": time.time(),
            "home": str(settings.home.resolve()),
            "knowledge_bases": kbs,
            "users": users,
            "vectors": vectors,
            "settings": kept,
        }
        say("writing", 0, 1)
        write_bundle(path, manifest, members)
        tighten(path)
        say("writing", 1, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.perf_counter() - started
    return HomeBackup(str(path), str(settings.home), kbs, users, vectors, kept, seconds, notes)


def _copy_catalog(settings: Settings, work: Path) -> dict[str, Path]:
    """The catalog and the conversations as the backup's SQLite members: copied whole from
    SQLite files, or, from PostgreSQL, every catalog table in one snapshot and every thread
    through the checkpointers (catalog_copy.py)."""
    target, conversations = settings.catalog_target, settings.conversations_target
    if isinstance(target, str):
        copy_catalog(target, work / "catalog.db")
        copy_conversations(conversations, work / "checkpoints")
        return {"catalog.db": work / "catalog.db", "conversations.sqlite": work / "checkpoints"}
    members = {"catalog.db": copy_sqlite(target, work / "catalog.db")}
    if isinstance(conversations, Path) and conversations.is_file():
        members["conversations.sqlite"] = copy_sqlite(conversations, work / "checkpoints")
    return members


def copy_sqlite(source: Path, target: Path) -> Path:
    """Copy a SQLite database with the online backup API: one snapshot, in one step, while
    other connections write; the copy is a single file (rollback journal, not WAL)."""
    try:
        src = sqlite3.connect(str(source), timeout=30)
        dst = sqlite3.connect(str(target))
        try:
            src.backup(dst)  # pages=-1: the whole database in one step, one read snapshot
            dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
            src.close()
    except sqlite3.Error as exc:
        raise StoreError(f"The database {source} cannot be copied: {exc}.") from exc
    return target


def _keep_staged(catalog: Catalog) -> None:
    """Put the uploads that unfinished builds staged in the home (or that a cancel left for a
    resume) into the copy's `staged_files`, so that the restored home can finish those builds
    wherever it is (core/build/durable.py `local_paths`)."""
    for row in catalog.jobs.all():
        unfinished = row["status"] not in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)
        left = row["status"] == JobState.CANCELLED and LEFT in (row.get("message") or "")
        if (unfinished or left) and row.get("staging"):
            keep_uploads(catalog.jobs, row["staging"])


def _write_settings(home: Path, target: Path) -> list[str]:
    """Write the home's saved settings without secrets to `target`; return the names kept."""
    saved = {k: v for k, v in load_saved(home).items() if k not in _SECRET_KEYS}
    if "OPENAI_BASE_URL" in saved:
        saved["OPENAI_BASE_URL"] = public_url(saved["OPENAI_BASE_URL"])
    if saved:
        target.write_text(json.dumps(saved, ensure_ascii=False, indent=2), encoding="utf-8")
    return sorted(saved)


def _vectors(
    settings: Settings, work: Path, members: dict[str, Path], say: Progress
) -> tuple[dict[str, dict[str, int]], int, bool, list[str]]:
    """Count what the snapshot holds and, where the vector store opens, copy the vectors it
    implies (one pair of members per knowledge base); say what was left out and why."""
    catalog = Catalog(members["catalog.db"])  # our copy: its stores may bring it up to date
    try:
        _keep_staged(catalog)
        graph, users = GraphStore(catalog.db), UserStore(catalog.db).count()
        kbs = catalog.list_kbs()
        counts = {
            kb.name: {
                "documents": sum(
                    d.status == DocumentState.INDEXED for d in catalog.list_documents(kb.id)
                ),
                "in_progress": sum(
                    d.status in (DocumentState.CHUNKED, DocumentState.REMOVING)
                    for d in catalog.list_documents(kb.id)
                ),
            }
            for kb in kbs
        }
        store, notes = _open_vectors(settings, catalog.deployment())
        if store is None:
            return counts, users, False, notes
        try:
            for number, kb in enumerate(kbs):
                say("vectors", number, len(kbs))
                wanted = {d.pk: d for d in derived_vectors(catalog, graph, kb)}
                found = [
                    r
                    for r in store.fetch(kb.dimension, list(wanted), batch=_FETCH_BATCH)
                    if int(r["kb"]) == kb.id and r["text"] == indexed_text(wanted[_pk(r)].text)
                ]
                _write_vectors(work, kb.id, kb.dimension, found, members)
                counts[kb.name]["vectors"] = len(found)
            say("vectors", len(kbs), len(kbs))
        finally:
            store.close()
        return counts, users, True, notes
    finally:
        catalog.close()


def _pk(record: dict[str, Any]) -> int:
    return primary_key(str(record["kind"]), int(record["ref_id"]))


def _open_vectors(settings: Settings, deployment: str) -> tuple[VectorStore | None, list[str]]:
    uri = settings.resolved_milvus_uri
    held = (
        "the vector store is open in another process (the app or a build), so the vectors are"
        " not in this backup: the restore embeds them again from its catalog"
    )
    if lite_in_use(uri):
        return None, [held]
    if settings.milvus_is_lite and not Path(uri).exists():
        return None, ["the home has no vector store yet"]
    try:
        return VectorStore(uri, settings.milvus_token, deployment=deployment), []
    except ZhixingError as exc:  # locked between the look and the open, or a server away
        reason = str(exc).rstrip(".")
        return None, [f"{reason}; the restore embeds the vectors again"]


def _write_vectors(
    work: Path, kb_id: int, dimension: int, found: list[dict[str, Any]], members: dict[str, Path]
) -> None:
    records = [
        {"kind": r["kind"], "ref_id": int(r["ref_id"]), "doc": int(r["doc"]), "text": r["text"]}
        for r in found
    ]
    dense = np.asarray([r["dense"] for r in found], dtype=np.float32).reshape(-1, dimension)
    lines = work / f"vectors-{kb_id}.jsonl"
    lines.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    arrays = work / f"vectors-{kb_id}.npy"
    with arrays.open("wb") as out:
        np.save(out, dense, allow_pickle=False)
    members[f"vectors/{kb_id}.jsonl"] = lines
    members[f"vectors/{kb_id}.npy"] = arrays
