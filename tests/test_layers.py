"""The layering rule (core/service/): pages and app/ reach the knowledge only through the
service. They import nothing from core but the service and the types it speaks in (the models,
the errors, the config, the trace events), and touch none of the service's private stores. And
no module of the project takes part in an import cycle, not even through a lazy import."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    f"zhixing.core.{m}" for m in ("service", "models", "models.graph", "errors", "config", "trace")
}
PACKAGES = ("core", "app", "cli", "pages")
STORES = {"_home", "_access", "_catalog", "_graph", "_users", "_vectors", "_pipeline", "_engine"}


def _sources() -> list[Path]:
    return sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "app").rglob("*.py")])


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an import-from names, a relative one resolved from `module` (the importer)."""
    if not node.level:
        return node.module or ""
    package = module.split(".")[: None if is_package else -1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])])


def _core_imports(
    tree: ast.AST, module: str = "", is_package: bool = False
) -> list[tuple[int, str]]:
    """Every core module a file imports, at any depth (function-level imports count too), and
    relative imports resolved from `module`, the importer's name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name) for a in node.names if a.name.startswith("zhixing.core")
            ]
        elif isinstance(node, ast.ImportFrom):
            named = _absolute(node, module, is_package)
            if named == "zhixing.core":
                found += [(node.lineno, f"zhixing.core.{a.name}") for a in node.names]
            elif named.startswith("zhixing.core."):
                found.append((node.lineno, named))
    return found


def test_pages_and_app_import_from_core_only_the_service_models_errors_and_config():
    imports = [
        (path, line, module)
        for path in _sources()
        for line, module in _core_imports(
            ast.parse(path.read_text(encoding="utf-8")),
            _module_name(path),
            path.name == "__init__.py",
        )
    ]
    assert len(imports) > 20, "the check sees app/'s relative imports of core"
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path, line, module in imports
        if module not in ALLOWED
    ]
    assert not wrong, "\n".join(wrong)


def test_no_page_reads_a_store_of_the_service():
    wrong = [
        f"{path.relative_to(ROOT)}:{node.lineno} reads .{node.attr}"
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in STORES
    ]
    assert not wrong, "\n".join(wrong)


def test_the_rule_catches_what_it_forbids():
    """The checks above see a store import and a store read (so they can fail)."""
    tree = ast.parse(
        "def f(service):\n    from zhixing.core.store.runs import RunStore\n"
        "    return service._home.catalog"
    )
    assert _core_imports(tree) == [(2, "zhixing.core.store.runs")]
    assert [
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in STORES
    ] == ["_home"]
    # The same reach, written as app/ writes its imports (relative), from app/ and app/strings/.
    relative = ast.parse("from ..core.store import runs\nfrom ..core.service import X\n")
    assert _core_imports(relative, "zhixing.app.rounds") == [
        (1, "zhixing.core.store"),
        (2, "zhixing.core.service"),
    ]
    deeper = ast.parse("from ...core.store.runs import RunStore\n")
    assert _core_imports(deeper, "zhixing.app.strings.recall") == [(1, "zhixing.core.store.runs")]


def test_core_app_and_cli_import_the_project_relatively_so_a_file_reader_resolves_them():
    """Inside core/, app/ and cli/ every import of the project is relative (`from ..store…`), so
    a tool that maps imports to files sees the whole graph; app/main.py, which Streamlit runs as
    a script, cli/studio.py, which `langgraph dev` loads by its path (langgraph.json), and pages/
    import by the package's name."""
    scripts = {ROOT / "app" / "main.py", ROOT / "cli" / "studio.py"}
    wrong = [
        f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}"
        for folder in ("core", "app", "cli")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path not in scripts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and not node.level
        and (node.module or "").startswith("zhixing.")
    ]
    assert not wrong, "\n".join(wrong)


def test_the_service_keeps_its_stores_private(service):
    """What a page can reach is the small services' methods, each checked by the access
    policy: the home of stores and the policy are private, on the door and on every service."""
    held = {name for name in vars(service) if not name.startswith("_")}
    services = {"kbs", "builds", "search", "conversations", "notebooks", "graph", "tasks", "tokens"}
    assert held == {"actor", "users", "admin", *services}
    assert {"_home", "_access"} <= set(vars(service))
    for name in held - {"actor"}:
        public = [a for a in vars(getattr(service, name)) if not a.startswith("_")]
        assert not public, f"service.{name} holds {public} in the open"


# --- import cycles ----------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = ["zhixing", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _walk_imports(node: ast.AST, checking: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, lazy ones in functions too, but not those under TYPE_CHECKING."""
    for child in ast.iter_child_nodes(node):
        typing_only = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
        if isinstance(child, ast.Import | ast.ImportFrom) and not checking:
            yield child
        yield from _walk_imports(child, checking or typing_only)


def import_graph(sources: Mapping[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the project modules it imports. `sources`: module -> (code, is a package).
    `from pkg import sub` depends on the submodule only; `from pkg import name` on pkg."""
    graph: dict[str, set[str]] = {}
    for module, (code, is_package) in sources.items():
        edges: set[str] = set()
        for node in _walk_imports(ast.parse(code)):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
                continue
            base = node.module or ""
            if node.level:
                package = module.split(".")[: None if is_package else -1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([base] if base else [])])
            subs = {f"{base}.{a.name}" for a in node.names} & set(sources)
            edges |= subs | ({base} if len(subs) < len(node.names) else set())
        graph[module] = {m for m in edges if m in sources and m != module}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_takes_part_in_an_import_cycle():
    sources = {
        _module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    graph = import_graph(sources)
    assert len(graph) > 100 and graph["zhixing.core.service"], (
        "the graph sees the project's imports"
    )
    assert cycles(graph) == []


def test_the_cycle_check_sees_lazy_and_relative_imports_but_not_typing_ones():
    sources = {
        "p": ("from p.a import f\n", True),
        "p.a": ("def f():\n    from p.b import g\n", False),
        "p.b": ("from . import a\n", False),
        "p.c": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import f\n",
            False,
        ),
    }
    graph = import_graph(sources)
    assert graph == {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": set()}
    assert cycles(graph) == [["p.a", "p.b"]]


def test_every_module_imports_the_project_by_its_one_name():
    """`zhixing.core…`, never `core…`: in a checkout both would import, as two copies of every
    module (two registries, two classes of each error), and the wheel has only the first."""
    wrong = []
    for folder in (*PACKAGES, "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if node.level == 0
                    else []
                )
                wrong += [
                    f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                    for name in names
                    if name.split(".")[0] in PACKAGES
                ]
    assert not wrong, "\n".join(wrong)


# A module name that appears in more than one package names one concept in each: the parts of a
# LangGraph graph (ask/, task/), the LLM-free path of a package, a page and its strings, or one
# concept's core and its front-end part. Any other repeat is a name that means two things.
SHARED_NAMES = {
    "state": "a graph's state (ask/, task/)",
    "nodes": "a graph's nodes (ask/, task/)",
    "flow": "a graph's LangGraph wiring (ask/, task/)",
    "prompts": "the prompts of a graph, and llm/'s prompt registry",
    "configuration": "a graph's run configuration (ask/, task/)",
    "offline": "a package's path without an LLM (extract/, task/)",
    "agent": "the agent page and its strings",
    "build": "the build page and its strings",
    "recall": "the recall page and its strings",
    "settings": "the settings page and its strings",
    "account": "the account page and its strings",
    "tokens": "MCP access tokens: their service in core, their section of the account page",
    "graph": "the entity graph: its store, its service, its page and the page's strings",
    "main": "a front end's entry point (app/, cli/)",
    "auth": "logins: roles in core, the login gate in app",
    "users": "users: their tables, their service, their section of the settings page",
    "notebooks": "notebooks: their tables in the store, the service over them",
    "tasks": "the task agent: its service in core, its run's view in app",
    "home": "a Zhixing home: its folder's rules (core/home.py), its opened stores (service/)",
    "notebook": "a notebook: its Markdown in core, its cell on the page",
    "background": "background builds: the registry in core, the app's one instance",
}


def test_a_module_name_that_repeats_names_one_concept():
    seen: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py":
                seen.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    repeats = {name: paths for name, paths in seen.items() if len(paths) > 1}
    unexplained = {name: paths for name, paths in repeats.items() if name not in SHARED_NAMES}
    assert not unexplained, f"one name, two concepts? rename or explain: {unexplained}"
    assert set(SHARED_NAMES) <= set(repeats), "a shared name that no longer repeats: drop it"


def test_core_reads_the_environment_only_through_its_settings():
    """Front ends read the environment (cli/: the command, MCP, the retriever) and hand core a
    `Settings`; core reads it in config.py alone, so a service is what its settings say."""
    readers = []
    for path in (ROOT / "core").rglob("*.py"):
        if path.name == "config.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("environ", "getenv")
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not readers, readers


def test_vulture_finds_no_dead_code_in_core_app_or_cli():
    """What vulture is sure of (80 %: an unused import, argument or unreachable line) is gone;
    its guesses below that (a method only a framework calls) are not checked."""
    found = subprocess.run(
        [sys.executable, "-m", "vulture", "core", "app", "cli", "--min-confidence", "80"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0 and not found.stdout.strip(), found.stdout + found.stderr
