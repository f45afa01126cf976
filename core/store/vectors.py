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
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from pymilvus import DataType, Function, FunctionType, MilvusClient
from pymilvus.exceptions import MilvusException

from ..errors import StoreError, StoreLockedError
from . import lite_share

__all__ = [
    "KINDS",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "count_collections",
    "indexed_text",
    "lite_in_use",
    "primary_key",
]

KINDS = ("chunk", "question", "entity", "relation")
# Milvus counts VARCHAR length in bytes; CJK text is three bytes a character in UTF-8.
log = logging.getLogger(__name__)

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
    """Whether `uri` is a Milvus Lite file held open by a process that does not share it
    (core/store/lite_share.py): one a Zhixing process holds is reached through its server."""
    is_lite = not uri.startswith(("http://", "https://", "tcp://", "grpc://"))
    return is_lite and lite_share.is_held(uri) and not lite_share.served(uri)


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
        self._token = token
        self._served = ""  # a guest's: the address of the holder's server it joined
        if is_lite:
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
        try:
            raw, self._served = self._open()
        except StoreError:
            raise
        except Exception as exc:  # pymilvus raises several unrelated types on a failed open
            where = "Milvus Lite file" if is_lite else "Milvus server"
            raise StoreError(f"The {where} at {uri} cannot be opened: {exc}.") from exc
        self.client: MilvusClient = cast(MilvusClient, _Shared(self, raw)) if is_lite else raw

    @property
    def is_guest(self) -> bool:
        """Whether this store reaches a Milvus Lite file through the process that holds it."""
        return bool(self._served)

    def _open(self) -> tuple[MilvusClient, str]:
        """A Milvus server's client; for Milvus Lite, the file's own when no process holds it
        (this process then serves it to the others, core/store/lite_share.py), else a client
        of the holder's server, with that server's address."""
        if not self._is_lite:
            return self._connect(self.uri, self._token), ""
        deadline = time.monotonic() + lite_share.WAIT_S
        while True:
            if not lite_share.is_held(self.uri):
                try:
                    client = self._connect(self.uri, self._token)
                except Exception:
                    if not lite_share.is_held(self.uri):
                        raise
                    # taken between the look and the open: join the process that took it
                else:
                    try:
                        lite_share.publish(self.uri)
                    except OSError:
                        log.warning("Other processes cannot share %s.", self.uri, exc_info=True)
                    return client, ""
            address = lite_share.served(self.uri)
            if address:
                try:
                    return self._connect(address, "", attempts=_CONNECT_ATTEMPTS), address
                except MilvusException:
                    if lite_share.served(self.uri) == address:
                        raise  # the holder is there and will not answer: say so
                    continue  # it went away meanwhile: take the file, or join the next one
            if time.monotonic() > deadline:
                raise StoreLockedError(
                    f"The knowledge base at {self.uri} is open in another process that does not"
                    " share it; close that program, or point ZHIXING_HOME elsewhere."
                )
            time.sleep(0.1)

    def _rejoin(self, failed: MilvusClient) -> MilvusClient:
        """After the holder went away: open the file again (taking it, or joining the process
        that took it first), load what was loaded, and hand back the new client."""
        shared = cast(_Shared, self.client)
        with self._lock:
            if shared.raw is not failed:
                return shared.raw  # another thread rejoined already
            with contextlib.suppress(Exception):
                failed.close()
            raw, self._served = self._open()
            for name in self._ready:
                raw.load_collection(name)
            shared.raw = raw
            log.info("Rejoined the Milvus Lite file %s after its holder went away.", self.uri)
            return raw

    def _holder_gone(self) -> bool:
        """Whether this guest's holder has let the file go (closed, or died)."""
        return bool(self._served) and lite_share.served(self.uri) != self._served

    def _connect(self, uri: str, token: str, *, attempts: int = 0) -> MilvusClient:
        """Open the client; a server is tried three times. gRPC shares one connection per
        address in a process, and a server that has just sent it away (a restart, or "too many
        pings": pymilvus pings every 10 s, which a Python gRPC server such as milvus-lite
        server's refuses) fails the first call on it while the connection comes back."""
        attempts = attempts or (1 if self._is_lite else _CONNECT_ATTEMPTS)
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
        if self._is_lite and not self._served:  # the holder: the others rejoin on their own
            from milvus_lite.server_manager import server_manager_instance

            lite_share.withdraw(self.uri)
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


def count_collections(uri: str, token: str = "", *, timeout_s: float = 5.0) -> int:
    """Open the store once, count its collections and close it again: a health probe.

    A Milvus Lite file is opened only when no process holds it (its lock is tried first, not
    taken); one that a Zhixing process holds is asked through that process's server
    (core/store/lite_share.py), and one held by a program that does not share it raises
    StoreLockedError naming the holder. A missing file is not created.
    """
    is_lite = not uri.startswith(("http://", "https://", "tcp://", "grpc://"))
    if is_lite and not Path(uri).exists():
        raise StoreError(
            f"There is no Milvus Lite file at {uri}; check ZHIXING_HOME, or open the home once"
            " (the app or any `zhixing` command) to create it."
        )
    if is_lite and lite_share.is_held(uri):
        address = lite_share.served(uri)
        if not address:
            raise StoreLockedError(_held(uri))
        uri, is_lite = address, False  # the holder serves it: ask its server
    try:
        with _quiet_milvus_lite():
            client = MilvusClient(uri=uri, token=token, timeout=timeout_s)
        try:
            return len(client.list_collections(timeout=timeout_s))
        finally:
            with contextlib.suppress(Exception):
                client.close()
            if is_lite:
                from milvus_lite.server_manager import server_manager_instance

                server_manager_instance.release_server(uri)
    except Exception as exc:  # pymilvus raises several unrelated types on a failed open
        if is_lite and lite_share.is_held(uri):  # taken between the look and the open
            raise StoreLockedError(_held(uri)) from None
        where = "Milvus Lite file" if is_lite else "Milvus server"
        detail = exc.message if isinstance(exc, MilvusException) else str(exc)
        raise StoreError(f"The {where} at {uri} cannot be opened: {detail}.") from exc


def _held(uri: str) -> str:
    pid = lite_share.holder(uri)
    who = f"process {pid}" if pid is not None else "another process"
    return (
        f"The Milvus Lite file at {uri} is held by {who}: Milvus Lite lets one process open it,"
        " so while the app or a command serves this home the store is in use, not broken."
    )


class _Shared:
    """A Milvus Lite file's client, shared between processes (core/store/lite_share.py): a
    guest's calls go to the holder's server, and one that fails because the holder went away
    opens the file again and is made once more."""

    def __init__(self, store: VectorStore, raw: MilvusClient) -> None:
        self._store = store
        self.raw = raw

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.raw, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            raw = self.raw
            try:
                with _quiet_pymilvus():
                    return getattr(raw, name)(*args, **kwargs)
            except MilvusException:
                if name == "close" or not self._store._holder_gone():
                    raise
            return getattr(self._store._rejoin(raw), name)(*args, **kwargs)

        return call


_calm = threading.local()


class _Calm(logging.Filter):
    """Drops pymilvus's records on a thread making a shared call (`_quiet_pymilvus`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_calm, "on", False)


_CALM = _Calm()


@contextlib.contextmanager
def _quiet_pymilvus() -> Iterator[None]:
    """pymilvus logs tracebacks to the console (its own handler) when a server it was connected
    to is gone; a guest copes (it rejoins) or raises, so they would only alarm the reader."""
    for handler in logging.getLogger("pymilvus").handlers:
        if _CALM not in handler.filters:
            handler.addFilter(_CALM)
    was = getattr(_calm, "on", False)
    _calm.on = True
    try:
        yield
    finally:
        _calm.on = was
