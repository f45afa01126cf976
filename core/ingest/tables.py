"""Markdown rendering shared by the parsers: tables, and joining wrapped text fragments."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["is_cjk", "join_fragments", "markdown_table"]

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")
_SPACE = re.compile(r"\s+")


def is_cjk(char: str) -> bool:
    """Tell whether a character is CJK (ideographs, kana, hangul, fullwidth punctuation)."""
    return bool(char) and _CJK.match(char) is not None


def join_fragments(left: str, right: str) -> str:
    """Join two pieces of wrapped text: no space between CJK characters, one space otherwise."""
    if not left:
        return right
    if not right:
        return left
    if is_cjk(left[-1]) or is_cjk(right[0]):
        return left + right
    return f"{left} {right}"


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    # One table row must stay on one line (wrapped CJK rejoins without a space), and a pipe
    # would start a new cell.
    joined = ""
    for part in text.splitlines():
        joined = join_fragments(joined, _SPACE.sub(" ", part).strip())
    return joined.replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """Render rows as a Markdown table; the first row is the header. Ragged rows are padded."""
    cleaned = [[_cell(value) for value in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)] or [[""]]
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(cleaned[0]) + " |", "|" + "---|" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in cleaned[1:])
    return "\n".join(lines)
