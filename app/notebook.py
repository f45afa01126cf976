"""A notebook cell on the page: its question and tools, its rounds, answer and hits.

The buttons act through callbacks (they run before the page draws), so the page always draws the
notebook as the service now holds it. A callback that wants a cell run marks it (`RUN`); the page
then runs it where it stands, the agentic rounds appearing inside the cell as they happen.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from ..core.errors import ZhixingError
from ..core.models import NotebookCell
from ..core.service import STRATEGIES, CellMode, KnowledgeService
from .rounds import RoundsView, render_answer, render_hits
from .strings import recall as T
from .widgets import inert, show_error

RUN = "nb-run"  # session key: the id of the cell to run on this pass
EDIT = "nb-edit"  # session key: the id of the cell whose form is open
FLASH = "nb-flash"  # session key: a (level, sentence) to show once
MODES = ("search", "answer", "agentic")
SCOPE = "recall-scope"  # the scope widget's key, and the name of the user's saved choice
# A question is a search query and a prompt: two thousand characters hold any question; a
# pasted document belongs in a knowledge base.
MAX_QUESTION_CHARS = 2000


def question_checked(question: str) -> str:
    """The question, or the sentence saying it is empty or over `MAX_QUESTION_CHARS`."""
    if not question.strip():
        raise ZhixingError(T.EMPTY_QUERY)
    if len(question) > MAX_QUESTION_CHARS:
        raise ZhixingError(
            T.QUESTION_TOO_LONG.format(length=len(question), limit=MAX_QUESTION_CHARS)
        )
    return question


def saved_scope(service: KnowledgeService, names: Sequence[str]) -> list[str]:
    """The scope this user chose last (kept per user, as their language is), of the knowledge
    bases they may still see; all of them when none is left."""
    try:
        chosen = json.loads(service.users.preference(SCOPE) or "[]")
    except ValueError:
        chosen = []
    visible = {T.SCOPE_ALL, *names}
    kept = (
        [n for n in chosen if isinstance(n, str) and n in visible]
        if isinstance(chosen, list)
        else []
    )
    return kept or [T.SCOPE_ALL]


def save_scope(service: KnowledgeService) -> None:
    """The scope changed: keep it for this user's next visit, page change or session."""
    service.users.set_preference(SCOPE, json.dumps(list(st.session_state.get(SCOPE) or [])))


def flash(level: str, message: str) -> None:
    st.session_state[FLASH] = (level, message)


def show_flash() -> None:
    level, message = st.session_state.pop(FLASH, (None, ""))
    if level == "warning":
        st.warning(inert(message))
    elif level == "success":
        st.success(inert(message))
    elif level == "error":
        st.error(inert(message))


def act(fn: Callable[[], Any]) -> None:
    """Run a cell action in a callback; a Zhixing error becomes a notice on the next draw."""
    try:
        fn()
    except ZhixingError as exc:
        flash("error", f"{T.ERROR_PREFIX}{exc}")


def settings_inputs(
    prefix: str, defaults: Sequence[str], *, mode: str, strategies: Sequence[str], top_k: int
) -> None:
    """The mode, strategies and top-k widgets of a cell form (their values in session state)."""
    mode_col, strategy_col, top_k_col = st.columns([2, 3, 1])
    mode_col.radio(
        T.MODE_LABEL,
        MODES,
        index=MODES.index(mode),
        format_func=T.MODES.__getitem__,
        horizontal=True,
        key=f"{prefix}-mode",
    )
    strategy_col.multiselect(
        T.STRATEGIES_LABEL,
        list(STRATEGIES),
        default=list(strategies or defaults),
        key=f"{prefix}-strategies",
    )
    top_k_col.number_input(T.TOP_K_LABEL, 1, 50, top_k, key=f"{prefix}-top-k")


def read_settings(prefix: str, defaults: Sequence[str]) -> dict[str, Any]:
    """What a cell form says, as `add_cell`/`edit_cell` take it; () strategies = the default."""
    chosen = list(st.session_state.get(f"{prefix}-strategies") or [])
    if not chosen and st.session_state.get(f"{prefix}-mode") != "agentic":
        raise ZhixingError(T.NO_STRATEGY)
    return {
        "mode": st.session_state.get(f"{prefix}-mode", "answer"),
        "strategies": () if set(chosen) == set(defaults) else chosen,
        "top_k": int(st.session_state.get(f"{prefix}-top-k") or 10),
    }


def show_cell(service: KnowledgeService, cell: NotebookCell, n: int) -> None:
    """One cell: its header and tools, its edit form when open, then its result (run now when
    marked)."""
    with st.container(border=True, key=f"cell-{cell.id}"):
        _header(service, cell, n)
        if st.session_state.get(EDIT) == cell.id:
            _edit_form(service, cell)
        if st.session_state.get(RUN) == cell.id:
            st.session_state.pop(RUN)
            cell = _run(service, cell)
            if cell.error:
                st.error(inert(f"{T.ERROR_PREFIX}{cell.error}"))
            _result(cell, replay=False)
        elif not cell.collapsed:
            if cell.error:
                st.error(inert(f"{T.ERROR_PREFIX}{cell.error}"))
            _result(cell, replay=True)


def _header(service: KnowledgeService, cell: NotebookCell, n: int) -> None:
    text_col, *tools = st.columns([12, 1, 1, 1, 1, 1, 1], vertical_alignment="center")
    head = text_col.container(key=f"cellhead-{cell.id}")
    head.markdown(f"**{n}.** {inert(cell.question)}")
    head.caption(inert(_meta(cell)))
    buttons = (
        ("run", "▶", T.RUN_HELP, lambda: st.session_state.update({RUN: cell.id})),
        ("edit", "✎", T.EDIT_HELP, lambda: _toggle_edit(cell.id)),
        ("up", "↑", T.UP_HELP, lambda: act(lambda: service.notebooks.move_cell(cell.id, -1))),
        ("down", "↓", T.DOWN_HELP, lambda: act(lambda: service.notebooks.move_cell(cell.id, 1))),
        (
            "fold",
            "▸" if cell.collapsed else "▾",
            T.EXPAND_HELP if cell.collapsed else T.COLLAPSE_HELP,
            lambda: act(lambda: service.notebooks.edit_cell(cell.id, collapsed=not cell.collapsed)),
        ),
        ("delete", "🗑", T.DELETE_HELP, lambda: act(lambda: service.notebooks.delete_cell(cell.id))),
    )
    for column, (name, icon, help_text, callback) in zip(tools, buttons, strict=True):
        column.button(icon, key=f"cell-{name}-{cell.id}", help=help_text, on_click=callback)


def _meta(cell: NotebookCell) -> str:
    parts = [T.MODES[str(cell.mode)]]
    if cell.mode != CellMode.AGENTIC:
        parts.append(", ".join(cell.strategies) or T.DEFAULT_STRATEGIES)
    parts.append(f"top {cell.top_k}")
    result = cell.result
    if result is not None and result.imported:
        parts.append(T.IMPORTED)
    elif result is not None and result.ran_at:
        when = time.strftime("%m-%d %H:%M", time.localtime(result.ran_at))
        parts.append(T.RAN_AT.format(when=when, seconds=result.seconds))
    return " · ".join(parts)


def _toggle_edit(cell_id: str) -> None:
    st.session_state[EDIT] = None if st.session_state.get(EDIT) == cell_id else cell_id


def _edit_form(service: KnowledgeService, cell: NotebookCell) -> None:
    prefix = f"cell-form-{cell.id}"
    defaults = service.search.default_strategies()
    with st.form(prefix):
        st.text_input(T.QUERY_LABEL, value=cell.question, key=f"{prefix}-query")
        settings_inputs(
            prefix, defaults, mode=str(cell.mode), strategies=cell.strategies, top_k=cell.top_k
        )
        st.form_submit_button(
            T.SAVE_AND_RUN,
            type="primary",
            key=f"{prefix}-save",
            on_click=lambda: _save(service, cell.id, prefix, defaults),
        )


def _save(service: KnowledgeService, cell_id: str, prefix: str, defaults: Sequence[str]) -> None:
    def save() -> None:
        question = question_checked(str(st.session_state.get(f"{prefix}-query") or ""))
        service.notebooks.edit_cell(cell_id, question=question, **read_settings(prefix, defaults))
        st.session_state[EDIT] = None
        st.session_state[RUN] = cell_id

    act(save)


def _run(service: KnowledgeService, cell: NotebookCell) -> NotebookCell:
    """Run the cell here: the agentic rounds live inside it, a spinner for the others; with a
    model, the answer shows as it is written, until the finished one replaces it."""
    view = RoundsView(parent=st.container())
    try:
        if cell.mode == CellMode.AGENTIC:
            return service.notebooks.run_cell(cell.id, on_event=view)
        with st.spinner(T.SEARCHING):
            return service.notebooks.run_cell(cell.id, on_event=view)
    except Exception as exc:  # the page's boundary: a sentence, never a traceback
        show_error(exc)
        return cell
    finally:
        view.close()
        view.clear_answer()


def _result(cell: NotebookCell, *, replay: bool) -> None:
    result = cell.result
    if cell.withheld:  # the service kept back what a lost knowledge base gave it
        st.info(T.WITHHELD)
        return
    if result is None:
        st.caption(T.NOT_RUN)
        return
    hits = cell.hits
    events = result.events
    if events and replay:
        RoundsView(live=False).replay(events)
    answer = result.answer
    if answer is not None:
        render_answer(answer, hits=hits)
        if not answer.get("found") and hits:
            st.caption(T.NOT_FOUND_WITH_HITS)
    if result.imported:
        return
    render_hits(hits, T.HITS_HEADER if events is None else T.EVIDENCE_HEADER)
