"""Notebooks and their cells: each user's questions over one set of knowledge bases, with what
each cell's last run found.

Kept in the catalog's SQLite, created here by its own `CREATE TABLE IF NOT EXISTS`, like the run
log. A notebook is keyed by its owner and its scope (the sorted knowledge-base names, `[]` for
"all I may see"), so a user meets the same notebook whenever they pick the same knowledge bases.
The store checks ownership on every cell it touches (a cell of someone else's notebook reads as
missing) but no other right: the service checks those.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..choices import CellMode
from ..errors import NotFoundError
from ..models import CellResult, Notebook, NotebookCell
from .dialect import SqlDatabase

__all__ = ["NotebookStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS notebooks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL,
    UNIQUE (owner, scope)
);
CREATE TABLE IF NOT EXISTS notebook_cells (
    id TEXT PRIMARY KEY,
    notebook TEXT NOT NULL REFERENCES notebooks (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    question TEXT NOT NULL,
    mode TEXT NOT NULL,
    strategies TEXT NOT NULL DEFAULT '[]',
    top_k INTEGER NOT NULL,
    collapsed INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT NOT NULL DEFAULT '',
    updated_at {real} NOT NULL
);
CREATE INDEX IF NOT EXISTS notebook_cells_order ON notebook_cells (notebook, position)
"""
# Positions are distinct (each write renumbers under the write lock); a tie, from an older
# catalog, falls back to the order cells were written, which only SQLite keeps (rowid).
_CELL_ORDER = {"sqlite": "position, rowid", "postgresql": "position, id"}
_MISSING = "There is no such cell in your notebook; it may have been deleted in another tab."


class NotebookStore:
    """Notebooks and cells in the home's database; every method takes the owner it checked."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        with db.transaction():
            db.executescript(db.dialect.ddl(_SCHEMA))

    # --- notebooks --------------------------------------------------------------------------

    def notebook_for(self, owner: str, kbs: Sequence[str]) -> Notebook:
        """The owner's notebook over exactly these knowledge bases, made on first use."""
        scope = json.dumps(sorted(set(kbs)), ensure_ascii=False)
        now = time.time()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO notebooks (id, owner, scope, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (uuid.uuid4().hex, owner, scope, now, now),
            )
        row = self.db.rows("SELECT * FROM notebooks WHERE owner = ? AND scope = ?", (owner, scope))[
            0
        ]
        return self._notebook(row)

    def notebook(self, notebook_id: str, owner: str) -> Notebook:
        """The owner's notebook with its cells in order; another user's reads as missing."""
        rows = self.db.rows(
            "SELECT * FROM notebooks WHERE id = ? AND owner = ?", (notebook_id, owner)
        )
        if not rows:
            raise NotFoundError("There is no such notebook; pick the knowledge bases again.")
        return self._notebook(rows[0])

    def _notebook(self, row: Mapping[str, Any]) -> Notebook:
        cells = self.db.rows(
            "SELECT * FROM notebook_cells WHERE notebook = ?"
            f" ORDER BY {_CELL_ORDER[self.db.dialect.name]}",
            (row["id"],),
        )
        return Notebook(
            id=row["id"],
            owner=row["owner"],
            kbs=tuple(json.loads(row["scope"])),
            cells=tuple(_cell(c) for c in cells),
            updated_at=row["updated_at"],
        )

    # --- cells ------------------------------------------------------------------------------

    def add_cell(
        self,
        notebook_id: str,
        owner: str,
        question: str,
        *,
        mode: CellMode,
        strategies: Sequence[str],
        top_k: int,
        result: CellResult | None = None,
    ) -> NotebookCell:
        """Append a cell to the owner's notebook and return it (not yet run, unless `result`)."""
        self.notebook(notebook_id, owner)  # the owner's, or NotFoundError
        cell_id, now = uuid.uuid4().hex, time.time()
        with self.db.transaction():
            last = self.db.rows(
                "SELECT COALESCE(MAX(position), -1) AS last FROM notebook_cells WHERE notebook = ?",
                (notebook_id,),
            )[0]["last"]
            self.db.execute(
                "INSERT INTO notebook_cells (id, notebook, position, question, mode, strategies,"
                " top_k, result, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    cell_id,
                    notebook_id,
                    int(last) + 1,
                    question,
                    str(mode),
                    json.dumps(list(strategies)),
                    top_k,
                    _dumps(result),
                    now,
                ),
            )
            self._touch(notebook_id, now)
        return self.cell(cell_id, owner)

    def cell(self, cell_id: str, owner: str) -> NotebookCell:
        rows = self.db.rows(
            "SELECT c.* FROM notebook_cells c JOIN notebooks n ON n.id = c.notebook"
            " WHERE c.id = ? AND n.owner = ?",
            (cell_id, owner),
        )
        if not rows:
            raise NotFoundError(_MISSING)
        return _cell(rows[0])

    def update_cell(self, cell_id: str, owner: str, **fields: Any) -> NotebookCell:
        """Change a cell's question, mode, strategies, top_k, collapsed, result or error."""
        cell = self.cell(cell_id, owner)
        columns: dict[str, Callable[[Any], Any]] = {
            "question": lambda v: str(v),
            "mode": lambda v: str(v),
            "strategies": lambda v: json.dumps(list(v)),
            "top_k": int,
            "collapsed": lambda v: int(bool(v)),
            "result": _dumps,
            "error": lambda v: str(v),
        }
        unknown = set(fields) - set(columns)
        if unknown:
            raise ValueError(f"A cell has no field {sorted(unknown)[0]!r}.")
        if not fields:
            return cell
        now = time.time()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        values = [columns[name](value) for name, value in fields.items()]
        with self.db.transaction():
            self.db.execute(
                f"UPDATE notebook_cells SET {assignments}, updated_at = ? WHERE id = ?",
                (*values, now, cell_id),
            )
            self._touch(cell.notebook, now)
        return self.cell(cell_id, owner)

    def delete_cell(self, cell_id: str, owner: str) -> None:
        cell = self.cell(cell_id, owner)
        with self.db.transaction():
            self.db.execute("DELETE FROM notebook_cells WHERE id = ?", (cell_id,))
            self._touch(cell.notebook, time.time())

    def move_cell(self, cell_id: str, owner: str, offset: int) -> None:
        """Move a cell `offset` places (negative: up), stopping at either end."""
        cell = self.cell(cell_id, owner)
        order = [c.id for c in self.notebook(cell.notebook, owner).cells]
        index = order.index(cell_id)
        target = max(0, min(len(order) - 1, index + offset))
        if target == index:
            return
        order.insert(target, order.pop(index))
        with self.db.transaction():
            self.db.executemany(
                "UPDATE notebook_cells SET position = ? WHERE id = ?",
                [(position, cid) for position, cid in enumerate(order)],
            )
            self._touch(cell.notebook, time.time())

    def _touch(self, notebook_id: str, now: float) -> None:
        self.db.execute("UPDATE notebooks SET updated_at = ? WHERE id = ?", (now, notebook_id))


def _dumps(value: CellResult | None) -> str | None:
    return None if value is None else json.dumps(value.to_json(), ensure_ascii=False, default=str)


def _cell(row: Mapping[str, Any]) -> NotebookCell:
    return NotebookCell(
        id=row["id"],
        notebook=row["notebook"],
        position=int(row["position"]),
        question=row["question"],
        mode=CellMode.parse(row["mode"]),
        strategies=tuple(json.loads(row["strategies"])),
        top_k=int(row["top_k"]),
        collapsed=bool(row["collapsed"]),
        result=CellResult.from_json(json.loads(row["result"])) if row["result"] else None,
        error=row["error"],
        updated_at=row["updated_at"],
    )
