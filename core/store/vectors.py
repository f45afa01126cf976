"""The Milvus vector store (docs/architecture.md §3): one collection per embedding dimension.

Each row is a chunk, question, entity or relation: a dense vector (HNSW, COSINE) and a sparse BM25
vector that Milvus computes itself from `text`. The same code talks to Milvus Lite (a local file)
and to a Milvus server.

`text` arrives analysed (core/store/analysis.py: space-separated ASCII tokens from analysis 2 on),
so a new collection splits it with Milvus's `standard` tokenizer, at word boundaries (Milvus
Lite offers `standard` and `jieba` only). Collections created before use jieba, which keeps those
tokens whole too, and they keep it: a collection's analyzer cannot change. `standard` costs a
third of jieba's time to insert (6,000 2wiki passages: 1.9 s against 5.1 s of this process's CPU;
Milvus Lite runs inside it), time a build would otherwise take from embedding.

Filter expressions are built here only from integers and the fixed `KINDS`, never from user text:
Milvus Lite rejects filter templates, so names are resolved to ids in the catalog first.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import DataType, Function, FunctionType, MilvusClient
from pymilvus.exceptions import MilvusException

from ..errors import StoreError, StoreLockedError

__all__ = [
    "KINDS",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "indexed_text",
    "lite_in_use",
    "primary_key",
]

KINDS = ("chunk", "question", "entity", "relation")
# Milvus counts VARCHAR length in bytes; CJK text is three bytes a character in UTF-8.
_TEXT_BYTES = 16_000
_HNSW = {"M": 16, "efConstruction": 200}
# The analyzer of collections created from now on (see the module docstring).
TOKENIZER = "standard"
_CONNECT_ATTEMPTS = 3  # opening a Milvus server (see VectorStore._connect)


def primary_key(kind: str, ref_id: int) -> int:
    """Derive the row's primary key from what it points at, so a retried upsert never duplicates."""
    return ref_id * len(KINDS) + KINDS.index(kind)


def indexed_text(text: str) -> str:
    """The text as a row keeps it (clipped to the field's bytes): what a backup compares."""
    return _clip_bytes(text, _TEXT_BYTES)


def lite_in_use(uri: str) -> bool:
    """Whether `uri` is a Milvus Lite file that a process holds open (this one included)."""
    is_lite = not uri.startswith(("http://", "https://", "tcp://", "grpc://"))
    return is_lite and _lite_is_locked(uri)


@dataclass(frozen=True)
class VectorRecord:
    kb: int
    doc: int  # the document a chunk or question belongs to; 0 for entities and relations
    kind: str
    ref_id: int
    text: str
    vector: Sequence[float]


@dataclass(frozen=True)
class VectorHit:
    kind: str
    ref_id: int
    score: float
    text: str = ""  # the indexed (analysed) text, only where the search asked for it


class VectorStore:
    """A thin, typed face over `MilvusClient`."""

    def __init__(self, uri: str, token: str = "", deployment: str = "") -> None:
        """`deployment` (the home's id, `Catalog.deployment()`) names this home's collections,
        so that homes sharing one Milvus server never write into each other's."""
        if deployment and not deployment.isalnum():
            raise StoreError(f"A deployment id is letters and digits; got {deployment!r}.")
        self.uri = uri
        self.deployment = deployment
        self._lock = threading.Lock()
        self._ready: set[str] = set()
        is_lite = not uri.startswith(("http://", "https://", "tcp://", "grpc://"))
        self._is_lite = is_lite
        if is_lite:
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.client = self._connect(uri, token)
        except Exception as exc:  # pymilvus raises several unrelated types on a failed open
            if is_lite and _lite_is_locked(uri):
                raise StoreLockedError(
                    f"The knowledge base at {uri} is open in another process; close the other"
                    " Zhixing app or command, or point ZHIXING_HOME elsewhere."
                ) from None
            where = "Milvus Lite file" if is_lite else "Milvus server"
            raise StoreError(f"The {where} at {uri} cannot be opened: {exc}.") from exc

    def _connect(self, uri: str, token: str) -> MilvusClient:
        """Open the client; a server is tried three times. gRPC shares one connection per
        address in a process, and a server that has just sent it away (a restart, or "too many
        pings": pymilvus pings every 10 s, which a Python gRPC server such as milvus-lite
        server's refuses) fails the first call on it while the connection comes back."""
        attempts = 1 if self._is_lite else _CONNECT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                with _quiet_milvus_lite():
                    return MilvusClient(uri=uri, token=token) if token else MilvusClient(uri=uri)
            except MilvusException:
                if attempt == attempts:
                    raise
                time.sleep(0.5 * attempt)
        raise AssertionError("not reached")

    def close(self) -> None:
        """Close the connection and, for Milvus Lite, stop its server so the file lock is freed."""
        with contextlib.suppress(Exception):
            self.client.close()
        if self._is_lite:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(self.uri)

    def collection_name(self, dimension: int) -> str:
        """`zhixing_<deployment>_d<dim>`; homes made before deployment ids: `zhixing_d<dim>`."""
        if self.deployment:
            return f"zhixing_{self.deployment}_d{dimension}"
        return f"zhixing_d{dimension}"

    def ensure_collection(self, dimension: int) -> str:
        """Create the collection for a dimension if needed, and make sure it is loaded."""
        name = self.collection_name(dimension)
        if name in self._ready:
            return name
        with self._lock:
            if name in self._ready:
                return name
            if not self.client.has_collection(name):
                with _quiet_milvus_lite():
                    self._create(name, dimension)
            # A collection reopened from disk must be loaded before it can be searched.
            self.client.load_collection(name)
            self._ready.add(name)
        return name

    def _create(self, name: str, dimension: int) -> None:
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pk", DataType.INT64, is_primary=True)
        # The partition key: a search filtered to some knowledge bases reads only their
        # partitions, and a knowledge base's delete touches only its own.
        schema.add_field("kb", DataType.INT64, is_partition_key=True)
        schema.add_field("doc", DataType.INT64)
        schema.add_field("kind", DataType.VARCHAR, max_length=16)
        schema.add_field("ref_id", DataType.INT64)
        schema.add_field(
            "text",
            DataType.VARCHAR,
            max_length=_TEXT_BYTES,
            enable_analyzer=True,
            analyzer_params={"tokenizer": TOKENIZER},
        )
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index = self.client.prepare_index_params()
        index.add_index("dense", index_type="HNSW", metric_type="COSINE", params=_HNSW)
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        self.client.create_collection(name, schema=schema)
        # Indexing an empty collection finishes at once: not waiting for it saves pymilvus's
        # half-second polls (a second of every first build).
        self.client.create_index(name, index, sync=False)

    def upsert(self, dimension: int, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        name = self.ensure_collection(dimension)
        rows = [
            {
                "pk": primary_key(r.kind, r.ref_id),
                "kb": r.kb,
                "doc": r.doc,
                "kind": r.kind,
                "ref_id": r.ref_id,
                "text": _clip_bytes(r.text, _TEXT_BYTES),
                "dense": np.asarray(r.vector, dtype=np.float32).tolist(),
            }
            for r in records
        ]
        self._call(self.client.upsert, name, rows)

    def flush(self, dimension: int) -> None:
        """Seal what was written into segments, after a build or a removal.

        Milvus Lite searches rows still in its write buffer by brute force in Python: on a
        9,000-row collection a dense search took 600 ms before a flush and 12 ms after.
        """
        self._call(self.client.flush, self.ensure_collection(dimension))

    def wait_until_indexed(self, dimension: int, timeout_s: float = 300.0) -> bool:
        """Wait until every row of the collection is in its indexes; False on timeout.

        Milvus builds the indexes of flushed segments in the background; until it is done, a
        search scans those rows by brute force (and competes with the index build for CPU).
        Benchmarks wait for this so they measure the steady state, not the minutes after a build.
        """
        name = self.ensure_collection(dimension)
        deadline = time.monotonic() + timeout_s
        while True:
            pending = 0
            for index in self._call(self.client.list_indexes, name):
                info = self._call(self.client.describe_index, name, index)
                pending += int(info.get("pending_index_rows", 0))
                pending += int(info.get("total_rows", 0)) - int(info.get("indexed_rows", 0))
            if pending <= 0:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    def delete(self, dimension: int, *, kb: int, doc: int | None = None) -> None:
        """Delete every row of a knowledge base, or of one document in it."""
        expr = f"kb == {int(kb)}" + ("" if doc is None else f" and doc == {int(doc)}")
        self._call(self.client.delete, self.ensure_collection(dimension), filter=expr)

    def delete_documents(self, dimension: int, *, kb: int, docs: Iterable[int]) -> None:
        ids = ", ".join(str(int(d)) for d in docs)
        if ids:
            expr = f"kb == {int(kb)} and doc in [{ids}]"
            self._call(self.client.delete, self.ensure_collection(dimension), filter=expr)

    def delete_refs(self, dimension: int, kind: str, ref_ids: Iterable[int]) -> None:
        pks = [primary_key(kind, int(i)) for i in ref_ids]
        if pks:
            self._call(self.client.delete, self.ensure_collection(dimension), ids=pks)

    def count(self, dimension: int, *, kb: int, kind: str | None = None) -> int:
        rows = self._call(
            self.client.query,
            self.ensure_collection(dimension),
            filter=_filter([kb], [kind] if kind else None),
            output_fields=["count(*)"],
        )
        return int(rows[0]["count(*)"]) if rows else 0

    def fetch(
        self, dimension: int, pks: Sequence[int], *, batch: int = 1000
    ) -> list[dict[str, Any]]:
        """The stored records (kb, doc, kind, ref_id, text, dense) of these primary keys;
        keys with no record are left out. For backups: search never needs it."""
        if not pks:
            return []
        collection = self.ensure_collection(dimension)
        fields = ["kb", "doc", "kind", "ref_id", "text", "dense"]
        found: list[dict[str, Any]] = []
        for start in range(0, len(pks), batch):
            found += self._call(
                self.client.get,
                collection,
                ids=list(pks[start : start + batch]),
                output_fields=fields,
            )
        return found

    def search_dense(
        self,
        dimension: int,
        vectors: Sequence[Sequence[float]] | np.ndarray,
        *,
        kbs: Sequence[int],
        kinds: Sequence[str] = ("chunk",),
        limit: int = 10,
    ) -> list[list[VectorHit]]:
        """Nearest neighbours by cosine, one ranked list per query vector."""
        data = [np.asarray(v, dtype=np.float32).tolist() for v in vectors]
        return self._search(dimension, data, "dense", kbs, kinds, limit, {"ef": max(64, limit)})

    def search_bm25(
        self,
        dimension: int,
        queries: Sequence[str],
        *,
        kbs: Sequence[int],
        kinds: Sequence[str] = ("chunk",),
        limit: int = 10,
        with_text: bool = False,
    ) -> list[list[VectorHit]]:
        """Full-text BM25 search, one ranked list per query, in the order Milvus returns.

        Milvus Lite reports BM25 scores negated, so callers rank by position, not by score.
        `with_text` returns each hit's indexed text as well (for core/search/signals.py).
        """
        data = [q for q in queries if q.strip()]
        if len(data) != len(queries):
            raise StoreError("A keyword query is empty.")
        return self._search(dimension, data, "sparse", kbs, kinds, limit, {}, with_text)

    def _search(
        self,
        dimension: int,
        data: list[Any],
        field: str,
        kbs: Sequence[int],
        kinds: Sequence[str],
        limit: int,
        params: dict[str, Any],
        with_text: bool = False,
    ) -> list[list[VectorHit]]:
        if not data or not kbs:
            return [[] for _ in data]
        name = self.ensure_collection(dimension)
        result = self._call(
            self.client.search,
            name,
            data=data,
            anns_field=field,
            limit=limit,
            filter=_filter(kbs, kinds),
            output_fields=["kind", "ref_id", *(["text"] if with_text else [])],
            search_params={"params": params} if params else {},
        )
        return [[_hit(h["entity"], h["distance"], with_text) for h in hits] for hits in result]

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MilvusException as exc:
            raise StoreError(f"Milvus refused the request: {exc.message}.") from exc


def _filter(kbs: Sequence[int], kinds: Sequence[str] | None) -> str:
    """Build a filter from integer ids and the fixed kinds only (never from user text)."""
    ids = ", ".join(str(int(k)) for k in kbs)
    expr = f"kb in [{ids}]"
    if kinds:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise StoreError(f"Unknown vector kind(s): {', '.join(sorted(unknown))}.")
        expr += " and kind in [" + ", ".join(f'"{k}"' for k in kinds) + "]"
    return expr


def _hit(entity: dict[str, Any], distance: float, with_text: bool) -> VectorHit:
    text = str(entity.get("text", "")) if with_text else ""
    return VectorHit(entity["kind"], int(entity["ref_id"]), float(distance), text)


def _clip_bytes(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


@contextlib.contextmanager
def _quiet_milvus_lite() -> Iterator[None]:
    """Keep Milvus Lite's own traceback of a failed open (and jieba's banner) off the console.

    The failure itself is not hidden: it surfaces as a StoreError with one clear sentence.
    """
    # grpc._server: pymilvus asks Milvus Lite for a timestamp it does not implement while
    # waiting for a new index; pymilvus copes, but the server logs a traceback first.
    loggers = [logging.getLogger(name) for name in ("milvus_lite", "grpc._server")]
    was_disabled = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    # Milvus Lite's jieba analyzer prints a banner on first use, and jieba sets its logger to
    # DEBUG when it is imported: so import it here, first, and quieten it.
    import jieba

    jieba.setLogLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, was_disabled, strict=True):
            logger.disabled = disabled


def _lite_is_locked(uri: str) -> bool:
    """Tell whether another process holds Milvus Lite's advisory lock on this data dir."""
    lock = Path(uri) / "LOCK"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
