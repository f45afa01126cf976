"""Notebooks of the knowledge service (docs/architecture.md §8): each user's cells of questions
over a set of knowledge bases, kept, edited, re-run in place, reordered, exported and imported.

A cell runs through the service's own search (`query`, `summarize` and `ask`,
core/service/search.py), so it passes the same role and visibility checks as any search; a notebook belongs to
the user who made it and nobody else sees it. A run that fails with a Zhixing error keeps the
sentence on the cell (and the cell's earlier result), so a reload shows what went wrong.

Cells obey the rule conversations obey: a cell whose last run consulted a knowledge base the
user may no longer see (restricted since, or deleted) is withheld — returned with no result,
`withheld` set — by every method that returns cells, so no front end can show its hits,
evidence or answer. Its error sentence stays (a run names no content). Running it again
searches what the user may see now.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Sequence
from typing import Any

from ..choices import CellMode, Strategy
from ..errors import ZhixingError
from ..models import CellResult, Notebook, NotebookCell
from ..notebook import parse_notebook, to_markdown
from ..store.notebooks import NotebookStore
from ..trace import AnswerTextEvent, AskSink
from .access import Access
from .search import Search

__all__ = ["MAX_TOP_K", "Notebooks"]

MAX_TOP_K = 50
_TITLE = "知行笔记本 Zhixing notebook"


class Notebooks:
    def __init__(self, access: Access, search: Search) -> None:
        self._access, self._search = access, search

    @property
    def _store(self) -> NotebookStore:
        return self._access.home.notebooks

    @property
    def _owner(self) -> str:
        return self._access.actor.name

    def for_kbs(self, names: Sequence[str] | None = None) -> Notebook:
        """The actor's notebook over these knowledge bases (None or empty: all they may see),
        made on first use."""
        scoped = [] if not names or list(names) in (["@all"], ["all"]) else names
        kbs = [kb.name for kb in self._access.scope(scoped)] if scoped else []
        return self._withheld(self._store.notebook_for(self._owner, kbs))

    def open(self, notebook_id: str) -> Notebook:
        """One of the actor's notebooks, its cells in order (those that consulted a knowledge
        base the actor may no longer see withheld)."""
        return self._withheld(self._store.notebook(notebook_id, self._owner))

    def add_cell(
        self,
        notebook_id: str,
        question: str,
        *,
        mode: str = CellMode.ANSWER,
        strategies: Sequence[str] = (),
        top_k: int = 10,
    ) -> NotebookCell:
        """A new cell at the end of the notebook, not run yet (`run_cell` runs it)."""
        settings = _checked(question, mode, strategies, top_k)
        return self._store.add_cell(notebook_id, self._owner, **settings)

    def edit_cell(
        self,
        cell_id: str,
        *,
        question: str | None = None,
        mode: str | None = None,
        strategies: Sequence[str] | None = None,
        top_k: int | None = None,
        collapsed: bool | None = None,
    ) -> NotebookCell:
        """Change a cell's question or settings (its result stays until it runs again)."""
        cell = self._store.cell(cell_id, self._owner)
        checked = _checked(
            cell.question if question is None else question,
            cell.mode if mode is None else mode,
            cell.strategies if strategies is None else strategies,
            cell.top_k if top_k is None else top_k,
        )
        changes: dict[str, Any] = {k: v for k, v in checked.items() if getattr(cell, k) != v}
        if collapsed is not None and collapsed != cell.collapsed:
            changes["collapsed"] = collapsed
        return self._checked_cell(self._store.update_cell(cell_id, self._owner, **changes))

    def delete_cell(self, cell_id: str) -> None:
        self._store.delete_cell(cell_id, self._owner)

    def move_cell(self, cell_id: str, offset: int) -> None:
        """Move a cell up (negative) or down, stopping at either end."""
        self._store.move_cell(cell_id, self._owner, offset)

    def run_cell(self, cell_id: str, *, on_event: AskSink | None = None) -> NotebookCell:
        """Run a cell by its mode over its notebook's knowledge bases and keep what it found.

        A Zhixing error is kept on the cell as its sentence (the cell's last result stays) and
        the cell is returned; anything else propagates, and the cell is left as it was.
        """
        store, owner = self._store, self._owner
        cell = store.cell(cell_id, owner)
        names = list(store.notebook(cell.notebook, owner).kbs) or None
        started = time.time()
        try:
            result = self._run(cell, names, on_event)
        except ZhixingError as exc:  # the earlier result stays, withheld if it must be
            return self._checked_cell(store.update_cell(cell_id, owner, error=str(exc)))
        result = dataclasses.replace(
            result, ran_at=started, seconds=round(time.time() - started, 3)
        )
        ran = store.update_cell(cell_id, owner, result=result, error="", collapsed=False)
        return self._checked_cell(ran)

    def _withheld(self, book: Notebook) -> Notebook:
        """`book` with the cells the actor may no longer see withheld."""
        visible = self._access.visible_names()
        cells = tuple(_shown(c, book.kbs, visible) for c in book.cells)
        return dataclasses.replace(book, cells=cells)

    def _checked_cell(self, cell: NotebookCell) -> NotebookCell:
        """`cell` as the actor may see it now (withheld when it must be)."""
        book = self._store.notebook(cell.notebook, self._owner)
        return _shown(cell, book.kbs, self._access.visible_names())

    def _run(
        self, cell: NotebookCell, names: list[str] | None, on_event: AskSink | None
    ) -> CellResult:
        # The names searched are kept with the result: the cell is withheld from its owner once
        # any of them is no longer theirs to see (`_shown`).
        searched = [kb.name for kb in self._access.scope(names)]
        if cell.mode == CellMode.AGENTIC:
            outcome = self._search.ask(cell.question, searched, top_k=cell.top_k, on_event=on_event)
            return CellResult(
                hits=tuple(outcome.evidence),
                answer=outcome.answer.to_json(),
                events=tuple(dict(e) for e in outcome.events),
                kbs=tuple(searched),
            )
        strategies = list(cell.strategies) or None
        hits = self._search.query(cell.question, searched, top_k=cell.top_k, strategies=strategies)
        answer = None
        if cell.mode == CellMode.ANSWER:
            sink = on_event

            def show(text: str) -> None:
                if sink is not None:
                    sink(AnswerTextEvent(node="answer_text", round=1, text=text))

            answer = self._search.summarize(cell.question, hits, on_text=show).to_json()
        return CellResult(hits=tuple(hits), answer=answer, kbs=tuple(searched))

    def export(self, notebook_id: str) -> str:
        """The notebook as Markdown (core/notebook.py), ready to save or share."""
        return to_markdown(self.open(notebook_id), title=_TITLE)

    def import_cells(self, notebook_id: str, text: str) -> Notebook:
        """Append the cells of a notebook file to this notebook, with the answers it carried;
        nothing is added when the file is not a notebook (ZhixingError says why)."""
        drafts = parse_notebook(text)
        store, owner = self._store, self._owner
        store.notebook(notebook_id, owner)
        cells = []
        for draft in drafts:
            try:
                settings = _checked(draft.question, draft.mode, draft.strategies, draft.top_k)
            except ZhixingError:  # a strategy this version does not know: use the default
                settings = _checked(draft.question, draft.mode, (), draft.top_k)
            result = (
                None if draft.answer is None else CellResult(answer=draft.answer, imported=True)
            )
            cells.append((settings, result))
        for settings, result in cells:
            store.add_cell(notebook_id, owner, **settings, result=result)
        return self.open(notebook_id)


def _consulted(cell: NotebookCell, notebook_kbs: Sequence[str]) -> set[str]:
    """The knowledge bases a cell's last run searched: as the run kept them, or, for a result
    kept before runs named them, its notebook's and those its hits came from."""
    result = cell.result
    if result is None or result.imported:  # an answer from a file the user gave: no search
        return set()
    if result.kbs is not None:
        return set(result.kbs)
    return set(notebook_kbs) | {h.kb for h in result.hits}


def _shown(
    cell: NotebookCell, notebook_kbs: Sequence[str], visible: Collection[str]
) -> NotebookCell:
    """The cell, or the cell withheld (no result) when its last run consulted a knowledge base
    that is not in `visible`."""
    if cell.result is None or _consulted(cell, notebook_kbs) <= set(visible):
        return cell
    return dataclasses.replace(cell, result=None, withheld=True)


def _checked(question: str, mode: str, strategies: Sequence[str], top_k: int) -> dict[str, Any]:
    """A cell's settings as the store keeps them, or the sentence that says what is wrong."""
    question = " ".join(str(question).split())
    if not question:
        raise ZhixingError("The question is empty; type what you want to find.")
    if not 1 <= int(top_k) <= MAX_TOP_K:
        raise ZhixingError(f"top_k must be between 1 and {MAX_TOP_K}; got {top_k}.")
    return {
        "question": question,
        "mode": CellMode.parse(mode),
        "strategies": tuple(dict.fromkeys(str(Strategy.parse(s)) for s in strategies)),
        "top_k": int(top_k),
    }
