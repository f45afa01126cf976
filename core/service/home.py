"""The stores of one Zhixing home, opened once and shared by every view of the service.

`Home` owns the catalog, the users, the graph, the vector store, the LLM client, the embedder,
the build pipeline, the search engine and the registry of background builds; the run log, the
notebooks and the agents' checkpointer open on first use (a read-only home that only searches
never opens them). Nothing here checks who asks: that is the access policy's (access.py), which
every service of the package goes through.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, TypeVar, Unpack

from ..agents.checkpoints import Checkpointer, close_checkpointer, open_checkpointer
from ..build import BuildPipeline
from ..build.background import BuildJobs
from ..config import Settings
from ..embed import Embedder, make_embedder
from ..errors import StoreError, ZhixingError
from ..home import private_file, tighten_home
from ..llm.protocol import LLM
from ..llm.tracing import configure_tracing
from ..search import SearchEngine
from ..store import Catalog, VectorStore
from ..store.dialect import SqlDatabase, driver_errors
from ..store.graph import GraphStore
from ..store.notebooks import NotebookStore
from ..store.runs import RunStore
from ..store.users import UserStore

__all__ = ["Home", "HomeOptions"]

_T = TypeVar("_T")


class HomeOptions(TypedDict, total=False):
    """`llm` replaces the client the settings would make; `llm_options` (timeout_s,
    max_attempts, backoff_s) tune the one they make; `embedder` replaces the settings' one.
    `jobs` is the process's registry of background builds when it outlives the home (the
    app's); else the home has its own."""

    embedder: Embedder | None
    llm: LLM | None
    llm_options: Mapping[str, Any] | None
    jobs: BuildJobs | None


class Home:
    """Every store of one home (`HomeOptions` says what a caller may replace)."""

    def __init__(self, settings: Settings, **options: Unpack[HomeOptions]) -> None:
        llm, embedder, jobs = options.get("llm"), options.get("embedder"), options.get("jobs")
        self.settings = settings
        configure_tracing(settings)
        try:
            settings.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"The Zhixing home {settings.home} cannot be created ({exc.strerror or exc}); "
                "set ZHIXING_HOME to a folder this user may write."
            ) from exc
        self.catalog = Catalog(settings.catalog_target)
        self.users = UserStore(self.catalog.db)
        self.graph = GraphStore(self.catalog.db)
        if llm is None:
            from ..llm import LLMCache, make_client

            tuning = dict(options.get("llm_options") or {})
            llm = make_client(settings, LLMCache(self.catalog.db), **tuning)
        self.llm: LLM | None = llm
        self.embedder = embedder or make_embedder(settings)
        try:
            self.vectors = VectorStore(
                settings.resolved_milvus_uri,
                settings.milvus_token,
                deployment=self.catalog.deployment(),
            )
        except ZhixingError:
            self.catalog.close()
            raise
        self.pipeline = BuildPipeline(
            self.catalog, self.vectors, self.embedder, settings, graph=self.graph, llm=self.llm
        )
        self.engine = SearchEngine(
            self.catalog, self.vectors, self.embedder, self.graph, llm=self.llm
        )
        self.jobs = jobs if jobs is not None else BuildJobs()
        self._lock = threading.Lock()
        self._lazy: dict[str, Any] = {}
        self._memory: Checkpointer | None = None
        # Everything is open (Milvus Lite has made its folder): one walk takes group and other
        # bits off whatever an older Zhixing or a loose umask left (core/home.py).
        tighten_home(settings.home)

    @property
    def runs(self) -> RunStore:
        """The run log and the conversations (opened on first use)."""
        return self._opened("run log", RunStore)

    @property
    def notebooks(self) -> NotebookStore:
        return self._opened("notebooks", NotebookStore)

    @property
    def memory(self) -> Checkpointer:
        """The agents' LangGraph checkpointer (conversations' threads): in the home's
        `conversations.sqlite`, or in the catalog's database when that is on Postgres."""
        with self._lock:
            if self._memory is None:
                target = self.settings.conversations_target
                if isinstance(target, Path):
                    private_file(target)  # before SQLite makes it (and its -wal) by the umask
                self._memory = open_checkpointer(target)
            return self._memory

    def _opened(self, what: str, kind: Callable[[SqlDatabase], _T]) -> _T:
        """The store `kind` over the catalog, made on first use: the stores that write open
        only when something writes (a read-only home that only searches never opens them)."""
        with self._lock:
            if what not in self._lazy:
                try:
                    self._lazy[what] = kind(self.catalog.db)
                except driver_errors() as exc:
                    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    if self.settings.catalog_on_postgres:
                        from ..store.postgres import redacted

                        where = redacted(self.settings.catalog_uri)
                        raise StoreError(
                            f"The {what} in the catalog at {where} cannot be made"
                            f" ({reason}); give the user of ZHIXING_CATALOG_URI the right to"
                            " create and write tables in its database."
                        ) from exc
                    raise StoreError(
                        f"The {what} in {self.settings.home} cannot be written ({reason}); make"
                        " the Zhixing home writable, or set ZHIXING_HOME to a folder Zhixing may"
                        " write."
                    ) from exc
            store: _T = self._lazy[what]
            return store

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                close_checkpointer(self._memory)
                self._memory = None
        self.vectors.close()
        self.catalog.close()
        # A host that kept a loose umask (a library, not a front end) may have had files
        # made while it was open (Milvus Lite's segments): they leave owner-only too.
        tighten_home(self.settings.home)
