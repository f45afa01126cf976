"""Every `zhixing` command is documented in the README (as sqlite-utils checks its own)."""

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
