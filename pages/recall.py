"""Recall (召回): search the knowledge bases, with a grounded AI summary or the agentic loop."""

from __future__ import annotations

import streamlit as st

from app.rounds import RoundsView, render_answer, render_hits
from app.services import session_service
from app.strings import recall as T
from app.widgets import empty_state, kb_names, show_error
from core.service import STRATEGIES

service = session_service()
st.title(T.TITLE)
st.caption(T.CAPTION)
if not empty_state(service):
    st.stop()

query = st.text_input(T.QUERY_LABEL, placeholder=T.QUERY_PLACEHOLDER, key="recall-query")
scope_col, strategy_col, top_k_col = st.columns([2, 3, 1])
scope = scope_col.multiselect(
    T.SCOPE_LABEL,
    [T.SCOPE_ALL, *kb_names(service)],
    default=[T.SCOPE_ALL],
    format_func=lambda name: T.SCOPE_ALL_LABEL if name == T.SCOPE_ALL else f"@{name}",
    key="recall-scope",
)
strategies = strategy_col.multiselect(
    T.STRATEGIES_LABEL,
    list(STRATEGIES),
    default=list(service.default_strategies()),
    key="recall-strategies",
)
top_k = top_k_col.slider(T.TOP_K_LABEL, 1, 50, 10, key="recall-top-k")
ai_col, agentic_col = st.columns(2)
ai = ai_col.button(T.AI_BUTTON, type="primary", key="recall-ai", width="stretch")
agentic = agentic_col.button(T.AGENTIC_BUTTON, key="recall-agentic", width="stretch")
names = None if not scope or T.SCOPE_ALL in scope else scope

if (ai or agentic) and not query.strip():
    st.session_state.pop("recall-result", None)
    st.warning(T.EMPTY_QUERY)
elif ai and not strategies:
    st.session_state.pop("recall-result", None)
    st.warning(T.NO_STRATEGY)
elif ai:
    try:
        with st.spinner(T.SEARCHING):
            hits = service.search(query, names, top_k=top_k, strategies=strategies)
            answer = service.summarize(query, hits).to_json()
        st.session_state["recall-result"] = {"answer": answer, "hits": hits, "events": None}
    except Exception as exc:  # the page's boundary: a sentence, never a traceback
        st.session_state.pop("recall-result", None)
        show_error(exc)
elif agentic:
    st.subheader(T.ROUNDS_HEADER)
    view = RoundsView()
    try:
        result = service.ask(query, names, top_k=top_k, on_event=view)
        view.close()
        st.session_state["recall-result"] = {
            "answer": result.answer.to_json(),
            "hits": result.evidence,
            "events": result.events,
            "shown": True,  # the rounds are on screen already, live
        }
    except Exception as exc:  # the page's boundary: a sentence, never a traceback
        view.close()
        st.session_state.pop("recall-result", None)
        show_error(exc)

shown = st.session_state.get("recall-result")
if shown:
    if shown["events"] is not None and not shown.pop("shown", False):
        st.subheader(T.ROUNDS_HEADER)
        RoundsView(live=False).replay(shown["events"])
    st.subheader(T.ANSWER_HEADER)
    render_answer(shown["answer"])
    render_hits(shown["hits"], T.HITS_HEADER if shown["events"] is None else T.EVIDENCE_HEADER)
