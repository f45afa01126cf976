"""Borderless tables: find them from a header rule whose cell borders reveal the columns.

Pure geometry over `pdf_layout` lines, so it can be tested without a PDF.
"""

from __future__ import annotations

from collections.abc import Sequence

from .pdf_layout import Line, Rule, TableBlock, Word
from .tables import join_fragments

__all__ = ["find_rule_tables"]

# A rule segment this thin (points) is a drawn line, not a shaded area.
_RULE_THICKNESS = 1.5
# Segments of one rule that touch within this gap (points) are one cell border.
_JOIN_GAP = 1.0
_COLUMN_TOLERANCE = 2.0


def find_rule_tables(
    lines: Sequence[Line], rules: Sequence[Rule]
) -> tuple[list[TableBlock], set[int]]:
    """Find borderless tables anchored on a header rule whose cell borders reveal the columns.

    Word draws a table border cell by cell, so the rule under a header row is a run of touching
    segments with a joint at each column boundary. The header is the line(s) just above the rule;
    the body runs down while each line's words stay inside the columns. A new row starts where
    the first column has text; other lines continue the cells above. Returns the tables and the
    indexes of the lines they consumed.
    """
    anchors = [a for a in _rule_runs(rules) if len(a[1]) >= 3]
    anchors.sort(key=lambda a: a[0])
    header_sets = [_header_lines(lines, y, cols) for y, cols in anchors]
    claimed = {i for header in header_sets for i in header}
    tables: list[TableBlock] = []
    used: set[int] = set()
    for (y, cols), header in zip(anchors, header_sets, strict=True):
        body = _body_lines(lines, y, cols, claimed | used)
        if not body:
            continue
        rows = _rows(lines, header, body, cols)
        if not any(sum(1 for c in row if c) >= 2 for row in rows[1:]):
            continue
        members = header + body
        used.update(members)
        tables.append(
            TableBlock(
                top=min(lines[i].top for i in members),
                bottom=max(lines[i].bottom for i in members),
                rows=rows,
            )
        )
    return tables, used


def _rule_runs(rules: Sequence[Rule]) -> list[tuple[float, list[float]]]:
    """Merge rule segments into runs; return (y, column boundaries) for each run."""
    by_y: dict[int, list[Rule]] = {}
    for rule in sorted(rules, key=lambda r: (r.y, r.x0)):
        key = next((k for k in by_y if abs(k / 10 - rule.y) <= 1.0), round(rule.y * 10))
        by_y.setdefault(key, []).append(rule)
    runs: list[tuple[float, list[float]]] = []
    for key, group in by_y.items():
        group.sort(key=lambda r: r.x0)
        run = [group[0]]
        for seg in group[1:]:
            if seg.x0 <= max(r.x1 for r in run) + _JOIN_GAP:
                run.append(seg)
            else:
                runs.append((key / 10, _boundaries(run)))
                run = [seg]
        runs.append((key / 10, _boundaries(run)))
    return runs


def _boundaries(run: list[Rule]) -> list[float]:
    start, end = run[0].x0, max(r.x1 for r in run)
    joints: list[float] = []
    for seg in run:
        if seg.x1 - seg.x0 <= _RULE_THICKNESS:
            joints.append((seg.x0 + seg.x1) / 2)  # the little square where cell borders meet
        else:
            joints.extend((seg.x0, seg.x1))
    inner = sorted(j for j in joints if start + 3 < j < end - 3)
    merged: list[float] = []
    for joint in inner:
        if merged and joint - merged[-1] <= 3:
            merged[-1] = (merged[-1] + joint) / 2
        else:
            merged.append(joint)
    return [start, *merged, end]


def _column_of(word: Word, cols: list[float]) -> int | None:
    for index in range(len(cols) - 1):
        if (
            word.x0 >= cols[index] - _COLUMN_TOLERANCE
            and word.x1 <= cols[index + 1] + _COLUMN_TOLERANCE
        ):
            return index
    return None


def _fits(line: Line, cols: list[float]) -> bool:
    return all(_column_of(w, cols) is not None for w in line.words)


def _header_lines(lines: Sequence[Line], y: float, cols: list[float]) -> list[int]:
    """The line just above the rule, and up to two more above it that span several columns.

    A wrapped paragraph's last line can sit right above a table; a header line above the first
    one must use at least two columns to count.
    """
    above = [i for i, line in enumerate(lines) if line.bottom <= y + 1.0]
    header: list[int] = []
    limit = y
    for index in reversed(above):
        line = lines[index]
        gap = limit - line.bottom
        columns = {_column_of(w, cols) for w in line.words}
        if gap > (1.5 if not header else 0.6) * line.height or not _fits(line, cols):
            break
        if header and len(columns) < 2:
            break
        header.insert(0, index)
        limit = line.top
        if len(header) == 3:
            break
    return header


def _body_lines(lines: Sequence[Line], y: float, cols: list[float], taken: set[int]) -> list[int]:
    body: list[int] = []
    limit = y
    sizes: list[float] = []
    for index, line in enumerate(lines):
        if line.top < y - 1.0:
            continue
        if index in taken or not _fits(line, cols):
            break
        height = sizes[0] if sizes else line.height
        if line.top - limit > 3.0 * height or abs(line.height - height) > 0.3 * height:
            break
        body.append(index)
        sizes.append(line.height)
        limit = line.bottom
    return body


def _rows(
    lines: Sequence[Line], header: list[int], body: list[int], cols: list[float]
) -> list[list[str]]:
    width = len(cols) - 1
    head = [""] * width
    for index in header:
        _append_cells(head, lines[index], cols)
    rows: list[list[str]] = [head]
    for index in body:
        line = lines[index]
        starts_row = any(_column_of(w, cols) == 0 for w in line.words)
        if starts_row or len(rows) == 1:
            rows.append([""] * width)
        _append_cells(rows[-1], line, cols)
    return rows


def _append_cells(row: list[str], line: Line, cols: list[float]) -> None:
    for col in range(len(row)):
        words = [w for w in line.words if _column_of(w, cols) == col]
        if words:
            row[col] = join_fragments(row[col], Line(words).text)
