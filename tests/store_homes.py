"""The implementations the store contract suite runs (tests/test_store_contracts*.py): one entry
of `HOMES` per kind of home, each opening every store family on a folder in tmp_path.

`Home`'s fields are typed by the Protocols of core/store/contracts.py, so mypy checks that each
implementation satisfies them. The Postgres home (issue 38) opens its catalog on a database of
its own in the run's throwaway cluster (tests/postgres_cluster.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from zhixing.core.llm.cache import LLMCache
from zhixing.core.store.catalog import Catalog
from zhixing.core.store.contracts import (
    CatalogProtocol,
    GraphStoreProtocol,
    JobStoreProtocol,
    LLMCacheProtocol,
    NotebookStoreProtocol,
    RunStoreProtocol,
    UserStoreProtocol,
)
from zhixing.core.store.graph import GraphStore
from zhixing.core.store.notebooks import NotebookStore
from zhixing.core.store.runs import RunStore
from zhixing.core.store.users import UserStore


@dataclass
class Home:
    """Every store family of one home, as the rest of core sees them."""

    catalog: CatalogProtocol
    jobs: JobStoreProtocol
    users: UserStoreProtocol
    runs: RunStoreProtocol
    notebooks: NotebookStoreProtocol
    graph: GraphStoreProtocol
    cache: LLMCacheProtocol
    folder: Path
    opener: Callable[[Path], Home]  # the entry of HOMES that opened it

    def close(self) -> None:
        self.catalog.close()

    def reopen(self) -> Home:
        """The same home opened again, as by a later process (the caller closes it)."""
        return self.opener(self.folder)


def sqlite_home(folder: Path) -> Home:
    """The SQLite stores of a home, on one `Database` (catalog.db), opened as the service does."""
    catalog = Catalog(folder / "catalog.db")
    db = catalog.db
    return Home(
        catalog=catalog,
        jobs=catalog.jobs,
        users=UserStore(db),
        graph=GraphStore(db),
        cache=LLMCache(db),
        runs=RunStore(db),
        notebooks=NotebookStore(db),
        folder=folder,
        opener=sqlite_home,
    )


def postgres_home(folder: Path) -> Home:
    """The stores of a home whose catalog is a Postgres database (its URI in the folder, as
    `ZHIXING_CATALOG_URI` names it for a real home)."""
    catalog = Catalog((folder / "catalog.uri").read_text())
    db = catalog.db
    return Home(
        catalog=catalog,
        jobs=catalog.jobs,
        users=UserStore(db),
        cache=LLMCache(db),
        runs=RunStore(db),
        notebooks=NotebookStore(db),
        graph=GraphStore(db),
        folder=folder,
        opener=postgres_home,
    )


# kind of home -> how to open one in a folder (the same folder again: the same home, reopened)
HOMES: dict[str, Callable[[Path], Home]] = {
    "postgres": postgres_home,
    "sqlite": sqlite_home,
}


def open_home(request: pytest.FixtureRequest, folder: Path) -> Iterator[Home]:
    """The body of each contract module's `home` fixture: the home of `request.param`."""
    if request.param == "postgres":  # a database of its own in the run's cluster
        cluster = request.getfixturevalue("postgres_cluster")
        (folder / "catalog.uri").write_text(cluster.new_database())
    home = HOMES[request.param](folder)
    yield home
    home.close()
