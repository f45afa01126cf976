"""The operations commands of `zhixing` (docs/architecture.md §9): `health`, a service probe.

`zhixing health` exits 0 when every configured part of the home is usable and 1 otherwise, so a
service manager (systemd, a container's health check) can run it as is; `--json` prints one
object with each part's status, sentence and duration.
"""

from __future__ import annotations

import argparse

from ..core.config import Settings
from ..core.health import PARTS, check_health
from .output import emit_json

__all__ = ["HANDLERS", "add_parsers"]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    health = sub.add_parser(
        "health",
        help="check the catalog, the vector store and the LLM endpoint (exit code 0 = healthy)",
    )
    health.add_argument("--json", action="store_true", help="print one JSON object")
    health.add_argument(
        "--skip",
        action="append",
        choices=PARTS,
        default=[],
        help="leave a part out (repeatable), e.g. --skip llm for a probe that restarts the app",
    )


def _health(args: argparse.Namespace, settings: Settings) -> int:
    health = check_health(settings, skip=args.skip)
    if args.json:
        emit_json(health.to_json())
    else:
        for check in health.checks:
            print(f"{check.part:<8} {check.status:<8} {check.seconds:6.3f}s  {check.message}")
    return 0 if health.healthy else 1


HANDLERS = {"health": _health}
