"""The README and docs/architecture.md keep up with the code: every `zhixing` command is in the
README (as sqlite-utils checks its own), and both layouts name every folder and module."""

from __future__ import annotations

import argparse
from pathlib import Path

from zhixing.cli.main import build_parser

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _commands(parser: argparse.ArgumentParser, prefix: str = "zhixing") -> list[str]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix} {name}")
                out += nested or [f"{prefix} {name}"]
    return out


def test_every_command_appears_in_the_readme():
    commands = _commands(build_parser())
    assert "zhixing user add" in commands and "zhixing serve" in commands
    missing = [c for c in commands if c not in README]
    assert not missing, f"not in the README: {missing}"


ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _layout(text: str, heading: str) -> str:
    """The section of a Markdown text that starts at `heading`, up to the next of its level."""
    start = text.index(heading)
    level = heading.split(" ")[0] + " "
    end = text.find("\n" + level, start + len(heading))
    return text[start : end if end >= 0 else None]


def _modules(folder: str) -> list[str]:
    return sorted(p.name for p in (ROOT / folder).glob("*.py") if not p.name.startswith("__"))


def test_the_layouts_of_the_readme_and_the_architecture_name_every_folder_and_module():
    readme = _layout(README, "## Layout")
    architecture = _layout(ARCHITECTURE, "## 1. Layout")
    folders = sorted(p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").exists())
    assert {"ask", "task", "store"} <= set(folders)
    missing = [f"core/{f}/" for f in folders if f"`core/{f}/`" not in readme]
    missing += [
        f"core/{m}"
        for m in _modules("core")
        if f"`{m}`" not in readme and f"`core/{m}`" not in readme
    ]
    missing += [f"cli/{m}" for m in _modules("cli") if f"`{m}`" not in readme]
    assert not missing, f"not in the README's layout: {missing}"
    missing = [f"core/{f}/" for f in folders if f"  {f}/" not in architecture]
    for folder in ("core", "app", "cli", "pages"):
        missing += [f"{folder}/{m}" for m in _modules(folder) if m not in architecture]
    assert not missing, f"not in docs/architecture.md §1: {missing}"
