"""Agent (智能体): a chat whose every question runs the agentic loop, round by round.

The conversation is the run log (`RunStore`): every `ask` is stored with its answer and trace,
so a reload replays it. "New conversation" moves a stored marker past the runs shown so far.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from app.rounds import RoundsView, render_answer
from app.services import knowledge_service
from app.strings import agent as T
from app.widgets import empty_state, kb_names, show_error
from core.store.runs import RunStore

MARKER = "agent-conversation"
HISTORY = 50  # runs replayed at most


def parse_mentions(text: str, known: Sequence[str]) -> tuple[list[str], list[str], str]:
    """Split `@name` mentions out of a message: (known names, unknown names, the question).

    The longest known name wins, so `@Java规范如何…` finds `Java规范` with no space after it.
    """
    names = sorted([*known, T.SCOPE_ALL.removeprefix("@")], key=len, reverse=True)
    found: list[str] = []
    unknown: list[str] = []

    def take(match: re.Match[str]) -> str:
        rest = match.group(1)
        name = next((n for n in names if rest.casefold().startswith(n.casefold())), None)
        if name is None:
            unknown.append(rest)
            return ""
        found.append(name)
        return rest[len(name) :]

    question = re.sub(r"(?:(?<=\s)|^)@(\S+)", take, text)
    return list(dict.fromkeys(found)), unknown, " ".join(question.split())


def show_run(run: dict) -> None:
    """One stored question and its answer, the rounds collapsed."""
    with st.chat_message("user"):
        st.markdown(run["question"])
        st.caption(T.SCOPE_NOTE.format(names="、".join(run["kbs"])))
    with st.chat_message("assistant"):
        RoundsView(live=False).replay(run["trace"])
        render_answer(run["answer"])


service = knowledge_service()
st.title(T.TITLE)
st.caption(T.CAPTION)
if not empty_state(service):
    st.stop()

runs = RunStore(service.catalog)
names = kb_names(service)
conversation = st.container()
with conversation:
    for run in runs.since(runs.marker(MARKER), HISTORY):
        show_run(run)

input_col, scope_col = st.columns([4, 1], vertical_alignment="bottom")
scope = scope_col.multiselect(
    T.SCOPE_LABEL,
    [T.SCOPE_ALL, *names],
    default=[T.SCOPE_ALL],
    format_func=lambda name: T.SCOPE_ALL_LABEL if name == T.SCOPE_ALL else f"@{name}",
    key="agent-scope",
)
if scope_col.button(T.NEW_CONVERSATION, key="agent-new"):
    runs.mark(MARKER)
    st.rerun()
message = input_col.chat_input(T.CHAT_PLACEHOLDER, key="agent-input")

if message:
    mentioned, unknown, question = parse_mentions(message, names)
    if unknown:
        st.warning(
            T.UNKNOWN_MENTION.format(
                names="、".join(f"@{n}" for n in unknown), known="、".join(names)
            )
        )
    if mentioned:
        targets = None if T.SCOPE_ALL.removeprefix("@") in mentioned else mentioned
    else:
        targets = None if not scope or T.SCOPE_ALL in scope else scope
    if not question:
        st.warning(T.EMPTY_QUESTION)
        st.stop()
    with conversation:
        with st.chat_message("user"):
            st.markdown(message)
        with st.chat_message("assistant"):
            view = RoundsView()
            try:
                result = service.ask(question, targets, on_event=view)
            except Exception as exc:  # the page's boundary: a sentence, never a traceback
                view.close()
                show_error(exc)
            else:
                view.close()
                render_answer(result.answer.to_json(), stream=True)
