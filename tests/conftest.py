"""Shared fixtures: a fresh Zhixing home in a temp dir, with real SQLite and real Milvus Lite."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.postgres_cluster import Cluster, cluster_or_skip
from zhixing.core.config import Settings
from zhixing.core.embed import BuiltinEmbedder, shared_builtin

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared(*parts: str) -> Path:
    """A path under ../shared/data, skipping the test with a reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/data holds the real test documents)")
    return path


def write_docs(folder: Path, documents: Mapping[str, str]) -> Path:
    """Make `folder` with one UTF-8 file a document (name -> text); return the folder."""
    folder.mkdir()
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def markdown_document(title: str, sections: Iterable[tuple[str, str]]) -> bytes:
    """A Markdown document: `# title`, then a `## heading` section a (heading, text) pair."""
    body = "".join(f"## {heading}\n\n{text}\n\n" for heading, text in sections)
    return f"# {title}\n\n{body}".encode()


def built_home(where: Path, embedder: BuiltinEmbedder, kb: str, documents: dict[str, str]) -> Path:
    """A home under `where` whose knowledge base `kb` holds `documents` (name -> text), built
    offline with `embedder`."""
    from zhixing.core.service import KnowledgeService

    docs = write_docs(where / "docs", documents)
    home = where / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create(kb)
        svc.builds.add(kb, sorted(docs.iterdir()))
    return home


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster for the run (each test makes its own database): skipped
    without PostgreSQL, except under CI=true (tests/postgres_cluster.py)."""
    yield from cluster_or_skip()


def pytest_configure(config: pytest.Config) -> None:
    """The test process's built-in model multiplies on one thread. `make test` runs one worker
    more than the cores (Makefile), and a model on every core in each of them leaves BLAS
    threads spinning against each other's (the task and conversation tests: 172 s -> 92 s of
    CPU, 115 s -> 71 s in three workers on two cores). Set before anything loads it."""
    shared_builtin().threads = 1


@pytest.fixture(scope="session")
def embedder() -> BuiltinEmbedder:
    """One built-in model for the whole run: loading it is the slow part. The process's own
    (`shared_builtin`), which the command run in-process and the answer's sentence relevance
    use too, so a worker loads it once."""
    return shared_builtin()


@pytest.fixture(scope="module")
def milvus_server(tmp_path_factory) -> str:
    """A real Milvus server (`milvus-lite server`, gRPC) per test module; tests keep apart on
    it by deployment id, as two homes on a team's server do. Per module, not per run: a
    connection that lives for minutes is sent away by that server ("too many pings"), which
    the store survives by retrying its open, and a test should not depend on that timing."""
    from tests.milvus_server import milvus_lite_server

    data = tmp_path_factory.mktemp("milvus-server") / "data"
    with milvus_lite_server(data) as uri:
        yield uri


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module that sets `BOTH_STORES = True` runs each test that uses `settings` twice: on a
    Milvus Lite file and on the real server (`milvus_server`), with the same assertions; one
    that sets `STORE_BACKENDS` names the backends itself ("postgres": a catalog on PostgreSQL beside
    the Milvus server, as a team's set has)."""
    stores = getattr(metafunc.module, "STORE_BACKENDS", None)
    if stores is None and getattr(metafunc.module, "BOTH_STORES", False):
        stores = ("lite", "server")
    if stores and "store_backend" in metafunc.fixturenames:
        metafunc.parametrize("store_backend", list(stores), indirect=True)


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> str:
    """Where `settings` keeps vectors: "lite" (a file in the home) unless parametrized."""
    return str(getattr(request, "param", "lite"))


@pytest.fixture
def settings(tmp_path: Path, store_backend: str, request: pytest.FixtureRequest) -> Settings:
    uri = request.getfixturevalue("milvus_server") if store_backend != "lite" else ""
    catalog = ""
    if store_backend == "postgres":
        catalog = request.getfixturevalue("postgres_cluster").new_database()
    return Settings(
        home=tmp_path / "home", embed_batch=32, parse_workers=1, milvus_uri=uri, catalog_uri=catalog
    )


@pytest.fixture
def service(settings: Settings, embedder: BuiltinEmbedder):
    from zhixing.core.service import KnowledgeService

    svc = KnowledgeService(settings, embedder=embedder)
    yield svc
    svc.close()


@pytest.fixture
def app_home(tmp_path, monkeypatch):
    """The app's home for an AppTest: a temp ZHIXING_HOME in offline mode. The app's cached
    service is cleared before and closed after (it holds the home's Milvus Lite file).

    A test that needs a prepared home copies one into it before the app first runs.
    """
    from zhixing.app.services import knowledge_service

    home = tmp_path / "home"
    monkeypatch.setenv("ZHIXING_HOME", str(home))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZHIXING_CHAT_MODEL", "ZHIXING_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ZHIXING_LANGUAGE", raising=False)  # AppTest has no browser: Chinese
    knowledge_service.clear()
    yield home
    if (home / "catalog.db").exists():
        knowledge_service().close()
    knowledge_service.clear()


@pytest.fixture
def build_home(app_home):
    """`app_home` for a page that builds: the app's build jobs cleared before, and finished (two
    minutes at most) and cleared after, before the service is closed."""
    from zhixing.app.background import build_jobs

    build_jobs.clear()
    yield app_home
    build_jobs().wait_all(120)
    build_jobs.clear()


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory, embedder) -> Path:
    """A home with the shipped sample documents (app/samples) in a graph-mode knowledge base
    "kb", built once per run; tests copy it (`shutil.copytree`) rather than change it."""
    from zhixing.core.service import KnowledgeService

    home = tmp_path_factory.mktemp("sample") / "home"
    samples = sorted((Path(__file__).resolve().parents[1] / "app" / "samples").glob("*.md"))
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        svc.builds.add("kb", samples)
    return home


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files with the most browser, process and slow tests run first, each file's tests
    still in their order: `make test` hands whole files to its workers, and a long file handed
    out last would leave one worker running it alone."""

    def weight(item: pytest.Item) -> int:
        if item.get_closest_marker("browser"):
            return 3
        return 1 if item.get_closest_marker("process") or item.get_closest_marker("slow") else 0

    files: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        files[path] = files.get(path, 0) + weight(item)
    items.sort(key=lambda item: -files[item.nodeid.split("::", 1)[0]])
