"""Markdown rendering shared by the parsers: tables, and joining wrapped text fragments.

Tables whose cells span rows or columns (HTML's `rowspan` and `colspan`) are laid out on a
grid first: a merged cell's text fills every slot it covers, so each row reads alone. Header
rows stacked above one another combine per column ("安全要求 / 第三级").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Cell", "is_cjk", "join_fragments", "markdown_table", "spanned_table"]

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


# A span larger than this is a mistake or an attack (colspan="100000"), not a layout.
MAX_SPAN = 100
_HEADER_JOIN = " / "


@dataclass(frozen=True)
class Cell:
    """A table cell as written: its text, the rows and columns it spans, whether it is a header."""

    text: str
    rows: int = 1
    cols: int = 1
    header: bool = False


def spanned_table(rows: Sequence[Sequence[Cell]]) -> str:
    """Render cells with spans as a Markdown table: merged cells repeat in every slot they
    cover, and the header rows at the top combine into one header row. A first row that is one
    cell across the whole table is its title, written above it."""
    grid = _grid(rows)
    titles = []
    while len(grid) > 1 and _whole_row(grid[0]):
        titles.append(_text(grid.pop(0)[0]))
    if not grid:
        return ""
    depth = _header_depth(grid)
    header = [_column_label([row[col] for row in grid[:depth]]) for col in range(len(grid[0]))]
    body = [_body_row(row) for row in grid[depth:]]
    return "\n\n".join([*titles, markdown_table([header, *body])])


def _grid(rows: Sequence[Sequence[Cell]]) -> list[list[Cell | None]]:
    """Place each cell in the first free slot of its row, filling every slot it spans."""
    grid: list[list[Cell | None]] = [[] for _ in rows]
    for r, row in enumerate(rows):
        col = 0
        for cell in row:
            while col < len(grid[r]) and grid[r][col] is not None:
                col += 1  # a slot taken by a cell spanning down from a row above
            height = min(max(cell.rows, 1), MAX_SPAN, len(rows) - r)
            width = min(max(cell.cols, 1), MAX_SPAN)
            for line in grid[r : r + height]:
                line.extend([None] * (col + width - len(line)))
                line[col : col + width] = [cell] * width
            col += width
    width = max((len(line) for line in grid), default=0)
    return [line + [None] * (width - len(line)) for line in grid if any(line)]


def _header_depth(grid: Sequence[Sequence[Cell | None]]) -> int:
    """How many rows at the top are headers: those made only of header cells, at least one."""
    depth = 0
    for line in grid[:-1]:  # a table of headers only keeps its last row as a row
        if not all(cell is None or cell.header for cell in line):
            break
        depth += 1
    return max(depth, 1)


def _column_label(stack: Sequence[Cell | None]) -> str:
    labels: list[str] = []
    for cell in stack:
        if cell is not None and cell.text and cell.text not in labels:
            labels.append(cell.text)
    return _HEADER_JOIN.join(labels)


def _body_row(line: Sequence[Cell | None]) -> list[str]:
    # A cell across the whole row labels the rows below it; it is not a value in each column.
    if _whole_row(line):
        return [_text(line[0])] + [""] * (len(line) - 1)
    return [_text(cell) for cell in line]


def _whole_row(line: Sequence[Cell | None]) -> bool:
    return len(line) > 1 and line[0] is not None and all(cell is line[0] for cell in line)


def _text(cell: Cell | None) -> str:
    return cell.text if cell is not None else ""
