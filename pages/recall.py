"""Recall (召回), a research notebook: each question is a cell that is kept (per user and set of
knowledge bases, through the service), edited and re-run in place, moved, folded, deleted, and
the notebook goes to Markdown and back. A cell searches (hits only), answers (hits and a
grounded answer) or runs the agentic loop, whose rounds appear inside the cell as they happen.
"""

from __future__ import annotations

import streamlit as st

from zhixing.app.notebook import (
    RUN,
    SCOPE,
    act,
    flash,
    question_checked,
    read_settings,
    save_scope,
    saved_scope,
    settings_inputs,
    show_cell,
    show_flash,
)
from zhixing.app.strings import recall as T
from zhixing.app.widgets import guarded, inert, open_page
from zhixing.core.errors import ZhixingError
from zhixing.core.service import KnowledgeService

NEW = "recall"  # the new cell's form and its widgets' key prefix


def add_cell(service: KnowledgeService, notebook: str, defaults: tuple[str, ...]) -> None:
    """The new cell's form was sent (its button, or Enter in the question): add it, run it."""

    def add() -> None:
        question = str(st.session_state.get(f"{NEW}-query") or "")
        try:
            question_checked(question)
        except ZhixingError as exc:
            flash("warning", str(exc))
            st.session_state[f"{NEW}-query"] = question  # kept in the box, to shorten it
            return
        cell = service.notebooks.add_cell(notebook, question, **read_settings(NEW, defaults))
        st.session_state[RUN] = cell.id

    act(add)


def import_file(service: KnowledgeService, notebook: str) -> None:
    upload = st.session_state.get("nb-import-file")
    if upload is None:
        flash("warning", T.IMPORT_NONE)
        return
    text = upload.getvalue().decode("utf-8", "replace")
    before = len(service.notebooks.open(notebook).cells)
    act(lambda: service.notebooks.import_cells(notebook, text))
    added = len(service.notebooks.open(notebook).cells) - before
    if added:
        flash("success", T.IMPORTED_CELLS.format(n=added))


service, names = open_page(T.TITLE, T.CAPTION)
scope = st.multiselect(
    T.SCOPE_LABEL,
    [T.SCOPE_ALL, *names],
    default=saved_scope(service, names),
    format_func=lambda name: T.SCOPE_ALL_LABEL if name == T.SCOPE_ALL else f"@{name}",
    key=SCOPE,
    on_change=save_scope,
    args=(service,),
)
notebook = guarded(lambda: service.notebooks.for_kbs(None if T.SCOPE_ALL in scope else scope))
if notebook is None:
    st.stop()
defaults = service.search.default_strategies()

export_col, import_col = st.columns([1, 3])
export_col.download_button(
    T.EXPORT,
    service.notebooks.export(notebook.id),
    file_name="zhixing-notebook.md",
    mime="text/markdown",
    key="nb-export",
    disabled=not notebook.cells,
)
with import_col.expander(T.IMPORT):
    st.file_uploader(T.IMPORT_FILE, type=["md", "markdown", "txt"], key="nb-import-file")
    st.button(T.IMPORT_BUTTON, key="nb-import", on_click=import_file, args=(service, notebook.id))
show_flash()
if not notebook.cells:
    st.caption(T.NO_CELLS)
for n, cell in enumerate(notebook.cells, start=1):
    show_cell(service, cell, n)

with st.form(NEW, clear_on_submit=True, border=True):
    # No max_chars: the browser would drop a longer paste without a word; `add_cell` says why.
    st.text_input(T.QUERY_LABEL, placeholder=T.QUERY_PLACEHOLDER, key=f"{NEW}-query")
    settings_inputs(NEW, defaults, mode="answer", strategies=defaults, top_k=10)
    st.form_submit_button(
        T.RUN_BUTTON,
        type="primary",
        key=f"{NEW}-run",
        on_click=add_cell,
        args=(service, notebook.id, defaults),
    )
st.caption(inert(T.ENTER_HINT))
