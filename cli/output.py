"""What the command's subcommands print: a value as one line of JSON, and a listing as JSON,
as one tab-separated line a row, or as a sentence saying how to make the first row."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = ["emit_json", "print_rows"]

Row = dict[str, Any]


def emit_json(value: Any, out: TextIO | None = None) -> None:
    """Write `value` as one line of JSON (non-ASCII kept as it is)."""
    # sys.stdout is read when called, not when defined: it may have been replaced since.
    (out or sys.stdout).write(json.dumps(value, ensure_ascii=False) + "\n")


def print_rows(
    rows: Sequence[Row], *, as_json: bool, empty: str, line: Callable[[Row], str]
) -> None:
    """Print a listing: as JSON, else `empty` when there is no row, else `line(row)` for each."""
    if as_json:
        emit_json(rows)
    elif not rows:
        print(empty)
    else:
        for row in rows:
            print(line(row))
