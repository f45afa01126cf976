"""The audit interpreter's modules form no import cycle, counting every import.

tests/test_layers.py checks the whole project but leaves imports under ``TYPE_CHECKING`` out;
here they count, with those inside functions: a cycle that only a lazy or typing-only import
keeps from failing at run time is still a cycle for whoever reads or splits the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "zhixing.core.audit"
AUDIT = Path(__file__).resolve().parents[1] / "core" / "audit"


def audit_imports(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the modules of the package it imports, at any depth (functions, ``if``
    blocks, ``TYPE_CHECKING`` included). ``sources``: module name (``""`` for the package's
    ``__init__``) -> its code. ``from . import x`` depends on submodule ``x`` when there is one,
    on the package otherwise."""
    graph: dict[str, set[str]] = {}
    for module, code in sources.items():
        edges: set[str | None] = set()
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                edges |= {_short(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    base = node.module or ""
                elif node.level == 1:  # every module here sits directly in the package
                    base = PACKAGE + (f".{node.module}" if node.module else "")
                else:
                    continue  # `from .. import x` leaves the package
                subs = {_short(f"{base}.{a.name}") for a in node.names} & set(sources)
                edges |= subs | ({_short(base)} if len(subs) < len(node.names) else set())
        graph[module] = {m for m in edges if m in sources and m != module}
    return graph


def _short(name: str) -> str | None:
    """``zhixing.core.audit.calls`` -> ``calls``, the package itself -> ``""``, else None."""
    if name == PACKAGE:
        return ""
    return name.removeprefix(PACKAGE + ".") if name.startswith(PACKAGE + ".") else None


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as a path that ends where it starts, or [] when there is none."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return []
        for nxt in sorted(graph[node]):
            found = visit(nxt, [*path, node])
            if found:
                return found
        done.add(node)
        return []

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return []


def _sources() -> dict[str, str]:
    return {
        "" if p.stem == "__init__" else p.stem: p.read_text(encoding="utf-8")
        for p in sorted(AUDIT.glob("*.py"))
    }


def test_the_audit_modules_import_one_another_without_a_cycle():
    graph = audit_imports(_sources())
    assert len(graph) > 10 and graph[""], "the graph sees the package's modules"
    assert find_cycle(graph) == [], " -> ".join(find_cycle(graph) or ["?"])


def test_the_check_sees_lazy_typing_only_and_absolute_imports():
    sources = {
        "": "from .a import f\n",
        "a": "def f():\n    from . import b\n",
        "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n",
        "c": "import zhixing.core.audit.a\nfrom ..models import Hit\n",
        "d": "from zhixing.core.audit import c\nfrom . import helper_name\n",
    }
    graph = audit_imports(sources)
    assert graph == {"": {"a"}, "a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"c", ""}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []
