"""A whole home restored from a backup (docs/architecture.md §9 `restore`), all or nothing.

The restore refuses a home that holds anything but a `logs/` folder, and a PostgreSQL database
that holds any table when the catalog goes there (a `postgresql://` catalog URI). It builds the
new home in a hidden folder beside the target (`.NAME.restoring-PID`) and moves its files in
only once all is written, so a corrupt or foreign archive, a full disk or a kill leaves the
target as it was.
In that folder it checks every member against the manifest (size, sha256) and the catalog with
`PRAGMA integrity_check`; gives the home a deployment id of its own (a Milvus server shared with
the source keeps the two apart); marks the builds the backup caught running `interrupted`, so
`zhixing resume` in the new home finishes them; rolls back the documents those builds had not
finished, exactly as a cancel does (`remove_documents`), so the home holds whole documents
only; and writes every vector the catalog implies: the backup's own where its text is the one
the catalog implies, else embedded again by the knowledge base's embedder. A catalog bound for
PostgreSQL is made in SQLite like any other and copied into the database last, with the
conversations (catalog_copy.py); a failure after that drops what it made there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..build.durable import this_process
from ..build.remove import remove_documents
from ..choices import DocumentState
from ..config import SETTINGS_FILE, Settings
from ..embed import Embedder, make_embedder
from ..errors import ConfigError, ParseError, StoreError
from ..home import private_dir, tighten_home
from ..models import KnowledgeBase
from ..store import Catalog, VectorRecord, VectorStore
from ..store.graph import GraphStore
from ..store.vectors import indexed_text
from .bundle import extract_bundle, read_manifest
from .catalog_copy import (
    copy_catalog,
    copy_conversations,
    empty_database,
    open_catalog,
    undo_restore,
)
from .derived import Derived, derived_vectors
from .snapshot import HomeBackup, Progress

__all__ = ["restore_home"]

_KEEP = {"logs"}  # what an empty home may already hold: the command's own debug log
_PLACED = {"catalog.db": "catalog.db", "conversations.sqlite": "conversations.sqlite"}
_PLACED[SETTINGS_FILE] = SETTINGS_FILE


def restore_home(
    settings: Settings,
    archive: Path,
    *,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> HomeBackup:
    """Restore the backup `archive` into the empty home of `settings`; `embedder` embeds what
    the backup holds no vectors for (by default, each knowledge base's own)."""
    started = time.perf_counter()
    say = progress or (lambda what, done, total: None)
    target, archive = Path(settings.home), Path(archive)
    _check_empty(target)
    database = _database(settings)
    before = empty_database(database) if database else set()
    manifest = read_manifest(archive)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = private_dir(target.parent / f".{target.name}.restoring-{this_process().pid}")
    # The restored home keeps a Milvus server the settings name; a Lite file is its own. It is
    # made in SQLite in the staging folder, and copied into the Postgres database last.
    uri = settings.milvus_uri if not settings.milvus_is_lite else ""
    restored = replace(settings, home=staging, milvus_uri=uri, catalog_uri="")
    home: _Opened | None = None
    writing = False
    try:
        incoming = private_dir(staging / ".incoming")
        say("checking", 0, 1)
        files = extract_bundle(archive, manifest, incoming)
        _check_catalog(files["catalog.db"], archive)
        for name, placed in _PLACED.items():
            if name in files:
                os.replace(files[name], staging / placed)
        _prepare_catalog(staging / "catalog.db")
        say("checking", 1, 1)
        home = _Opened(restored)
        kbs = _restore_vectors(home, files, archive, embedder, say)
        writing = bool(database)
        if database:
            say("copying the catalog into PostgreSQL", 0, 1)
            _into_postgres(staging, database)
        home.close()
        home = None
        if database:  # the home keeps neither file: both are in the database now
            _remove_databases(staging)
        shutil.rmtree(incoming)
        _move_in(staging, target)
    except BaseException:
        if home is not None:
            _drop(home)
        if writing:
            with contextlib.suppress(Exception):  # a server gone away keeps what it had
                undo_restore(database, before)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    tighten_home(target)
    return HomeBackup(
        str(archive),
        str(target),
        kbs,
        int(manifest.get("users") or 0),
        bool(manifest.get("vectors")),
        list(manifest.get("settings") or []),
        time.perf_counter() - started,
    )


def _check_empty(home: Path) -> None:
    if not home.exists():
        return
    if not home.is_dir() or any(p.name not in _KEEP for p in home.iterdir()):
        raise StoreError(
            f"{home} is not an empty folder; restore into a new home (`zhixing restore FILE"
            " --home NEW`), never over one that holds data."
        )


def _database(settings: Settings) -> str:
    """The Postgres database the catalog is restored into ("" = `catalog.db` in the home)."""
    if settings.catalog_uri and not settings.catalog_on_postgres:
        raise ConfigError(
            "A restore writes the catalog into the home or into a PostgreSQL database; give a"
            " postgresql:// catalog URI, or none for the home's own catalog.db."
        )
    return settings.catalog_uri


def _into_postgres(staging: Path, database: str) -> None:
    """Copy the restored catalog and conversations into the (empty) Postgres database."""
    copy_catalog(staging / "catalog.db", database)
    conversations = staging / "conversations.sqlite"
    if conversations.is_file():
        copy_conversations(conversations, database)


def _remove_databases(staging: Path) -> None:
    for name in ("catalog.db", "conversations.sqlite"):
        for suffix in ("", "-wal", "-shm", "-journal"):
            (staging / f"{name}{suffix}").unlink(missing_ok=True)


def _check_catalog(path: Path, archive: Path) -> None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            ok = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error:
        ok, tables = False, set()
    if not ok or not {"knowledge_bases", "documents", "chunks"} <= tables:
        raise ParseError(f"{archive} is corrupt: its catalog is not a sound Zhixing catalog.")


def _prepare_catalog(path: Path) -> None:
    """A deployment id of its own; the builds the backup caught running become `interrupted`
    (their processes are the source home's, not this one's), so `resume` finds them."""
    catalog = open_catalog(path)  # brings an older Zhixing's catalog up to date, as opening does
    try:
        catalog.renew_deployment()
        catalog.jobs.interrupt_dead(lambda _row: False)
    finally:
        catalog.close()


class _Opened:
    """The stores of the home being restored that the restore writes: catalog, graph, vectors."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.catalog = Catalog(settings.catalog_path)
        self.graph = GraphStore(self.catalog.db)
        try:
            self.vectors = VectorStore(
                settings.resolved_milvus_uri,
                settings.milvus_token,
                deployment=self.catalog.deployment(),
            )
        except BaseException:
            self.catalog.close()
            raise

    def close(self) -> None:
        self.vectors.close()
        self.catalog.close()


def _restore_vectors(
    home: _Opened, files: dict[str, Path], archive: Path, embedder: Embedder | None, say: Progress
) -> dict[str, dict[str, int]]:
    """Roll back unfinished documents, then write every vector the catalog implies."""
    embedders = _Embedders(home.settings, embedder)
    out: dict[str, dict[str, int]] = {}
    kbs = home.catalog.list_kbs()
    for number, kb in enumerate(kbs, 1):
        unfinished = [
            d.id
            for d in home.catalog.list_documents(kb.id)
            if d.status in (DocumentState.CHUNKED, DocumentState.REMOVING)
        ]
        say(f"rolling back {kb.name}", 0, len(unfinished))
        remove_documents(
            home.catalog,
            home.vectors,
            kb,
            unfinished,
            graph=home.graph,
            embedder=embedders.lazy(kb),
            flush=False,
        )
        wanted = list(derived_vectors(home.catalog, home.graph, kb))
        kept = _archived(files, kb, archive)
        embedded = 0
        batch = max(1, home.settings.embed_batch)
        for start in range(0, len(wanted), batch):
            part = wanted[start : start + batch]
            say(f"vectors of {kb.name} ({number}/{len(kbs)})", start, len(wanted))
            embedded += _write(home, kb, part, kept, embedders)
        home.vectors.flush(kb.dimension)
        say(f"vectors of {kb.name} ({number}/{len(kbs)})", len(wanted), len(wanted))
        documents = home.catalog.list_documents(kb.id)
        out[kb.name] = {
            "documents": sum(d.status == DocumentState.INDEXED for d in documents),
            "rolled_back": len(unfinished),
            "vectors": len(wanted),
            "embedded": embedded,
        }
    return out


def _write(
    home: _Opened,
    kb: KnowledgeBase,
    part: list[Derived],
    kept: dict[int, tuple[str, np.ndarray]],
    embedders: _Embedders,
) -> int:
    """Upsert one batch: the backup's vector where its text matches, else a new one."""
    vectors: list[Any] = [
        kept[d.pk][1] if d.pk in kept and kept[d.pk][0] == indexed_text(d.text) else None
        for d in part
    ]
    missing = [i for i, v in enumerate(vectors) if v is None]
    if missing:
        made = embedders.get(kb).embed([part[i].source for i in missing])
        for i, vector in zip(missing, made, strict=True):
            vectors[i] = vector
    home.vectors.upsert(
        kb.dimension,
        [
            VectorRecord(kb=kb.id, doc=d.doc, kind=d.kind, ref_id=d.ref_id, text=d.text, vector=v)
            for d, v in zip(part, vectors, strict=True)
        ],
    )
    return len(missing)


def _archived(
    files: dict[str, Path], kb: KnowledgeBase, archive: Path
) -> dict[int, tuple[str, np.ndarray]]:
    """The backup's vectors of a knowledge base: primary key -> (indexed text, vector)."""
    lines, arrays = files.get(f"vectors/{kb.id}.jsonl"), files.get(f"vectors/{kb.id}.npy")
    if lines is None or arrays is None:
        return {}
    try:
        records = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
        dense = np.load(arrays, allow_pickle=False)
        ok = dense.dtype == np.float32 and dense.shape == (len(records), kb.dimension)
        pks = [Derived(r["kind"], int(r["ref_id"]), 0, "", "").pk for r in records]
        texts = [str(r["text"]) for r in records]
    except (ValueError, KeyError, TypeError, OSError, EOFError):
        ok = False
    if not ok:
        raise ParseError(f"{archive} is corrupt: the vectors of {kb.name!r} do not match it.")
    return {pk: (text, dense[i]) for i, (pk, text) in enumerate(zip(pks, texts, strict=True))}


class _Embedders:
    """Each knowledge base's own embedder, made only when something must be embedded."""

    def __init__(self, settings: Settings, given: Embedder | None) -> None:
        self.settings, self.given = settings, given
        self.made: dict[str, Embedder] = {}

    def get(self, kb: KnowledgeBase) -> Embedder:
        if self.given is not None and (self.given.name, self.given.dimension) == (
            kb.embedding,
            kb.dimension,
        ):
            return self.given
        if kb.embedding not in self.made:
            try:
                self.made[kb.embedding] = make_embedder(
                    replace(self.settings, embedding=kb.embedding)
                )
            except ConfigError as exc:
                raise ConfigError(
                    f"The knowledge base {kb.name!r} was embedded with {kb.embedding}, which"
                    f" cannot be made here ({str(exc).rstrip('.')})."
                ) from exc
        return self.made[kb.embedding]

    def lazy(self, kb: KnowledgeBase) -> Embedder:
        return _Lazy(self, kb)


class _Lazy:
    """An embedder that is made on its first call (rolling back may embed nothing)."""

    def __init__(self, embedders: _Embedders, kb: KnowledgeBase) -> None:
        self.embedders, self.kb = embedders, kb

    @property
    def name(self) -> str:
        return self.kb.embedding

    @property
    def dimension(self) -> int:
        return self.kb.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedders.get(self.kb).embed(texts)


def _move_in(staging: Path, target: Path) -> None:
    """Move the finished home's files into the target folder (made if missing)."""
    private_dir(target)
    for entry in sorted(staging.iterdir()):
        os.replace(entry, target / entry.name)
    staging.rmdir()


def _drop(home: _Opened) -> None:
    """Take a failed restore's vectors off a Milvus server (a Lite file goes with its folder)."""
    with contextlib.suppress(Exception):
        if not home.settings.milvus_is_lite:
            for kb in home.catalog.list_kbs():
                home.vectors.delete(kb.dimension, kb=kb.id)
    with contextlib.suppress(Exception):
        home.close()
