"""The layering rule (core/service.py): pages and app/ reach the knowledge only through the
service. They import nothing from core but the service, the models, the errors and the config,
and touch none of the service's private stores."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {"core.service", "core.models", "core.errors", "core.config"}
STORES = {"_catalog", "_graph", "_users", "_vectors", "_pipeline", "_engine", "_runs", "_jobs"}


def _sources() -> list[Path]:
    return sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "app").rglob("*.py")])


def _core_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every core module a file imports, at any depth (function-level imports count too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "core"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "core":
                found += [(node.lineno, f"core.{a.name}") for a in node.names]
            elif node.module.startswith("core."):
                found.append((node.lineno, node.module))
    return found


def test_pages_and_app_import_from_core_only_the_service_models_errors_and_config():
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources()
        for line, module in _core_imports(ast.parse(path.read_text(encoding="utf-8")))
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
        "def f(service):\n    from core.store.runs import RunStore\n    return service._catalog"
    )
    assert _core_imports(tree) == [(2, "core.store.runs")]
    assert [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)] == ["_catalog"]


def test_the_service_keeps_its_stores_private(service):
    held = {name for name in vars(service) if not name.startswith("_")}
    assert held == {"settings", "actor", "llm", "embedder"}  # no store among them
    assert set(vars(service)) >= STORES - {"_runs", "_memory"}  # those two: properties
