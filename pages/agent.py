"""Agent (智能体): tasks (docs/architecture.md §7) that research the knowledge, re-plan, work
through a workspace and report. Questions are asked in the Recall notebook (pages/recall.py).

Each user has their own conversations (the service's `conversations`, `turns`): every task is
stored in the current one with its report and its trace, so a reload replays it (questions asked
here before the notebook existed replay too), and a task is researched with the earlier ones in
mind through the conversation's LangGraph thread. "New conversation" starts a new thread for this user alone;
nobody sees, resumes or clears another's. A workspace archive goes to the service as bytes: it
is staged under a name the server makes and removed when the run ends.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from zhixing.app.rounds import RoundsView, render_answer
from zhixing.app.strings import agent as T
from zhixing.app.tasks import TaskView, render_result
from zhixing.app.widgets import ROOT, guarded, inert, open_page, show_error
from zhixing.core.models import Conversation, Turn
from zhixing.core.service import ARCHIVE_SUFFIXES, KnowledgeService

SAMPLE_PROJECT = ROOT / "samples" / "springboot-shop"

CURRENT = "agent-conversation"  # session key: the id of the conversation on the page
HISTORY = 50  # turns replayed at most


def parse_mentions(text: str, known: Sequence[str]) -> tuple[list[str], list[str], str]:
    """Split `@name` mentions out of a message: (known names, unknown names, the question).

    The longest known name wins, so `@Java规范如何…` finds `Java规范` with no space after it.
    A mention inside the sentence stays in the question as the plain name.
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
        # Leading mentions only address the knowledge; inside a sentence the name is a word of
        # it ("参考 @sample 中的规范"), kept without its "@".
        leading = re.fullmatch(r"(?:\s*@\S+)*\s*", text[: match.start()]) is not None
        return rest[len(name) :] if leading else rest

    question = re.sub(r"(?:(?<=\s)|^)@(\S+)", take, text)
    return list(dict.fromkeys(found)), unknown, " ".join(question.split())


def show_turn(turn: Turn) -> None:
    """One stored question (or task) and its answer (or report), the rounds collapsed."""
    with st.chat_message("user"):
        st.markdown(inert(turn.question))
        st.caption(inert(T.SCOPE_NOTE.format(names=T.SEPARATOR.join(turn.kbs))))
    with st.chat_message("assistant"):
        if turn.kind == "task":
            render_result(turn.answer, key=f"turn-{turn.id}")
        else:
            RoundsView(live=False).replay(turn.trace)
            render_answer(turn.answer)


def conversation_picker(service: KnowledgeService, column: DeltaGenerator) -> str | None:
    """The user's conversations; the one picked (the latest on a fresh session), or None."""
    mine = guarded(service.conversations.all) or []
    ids = [c.id for c in mine]
    if st.session_state.get(CURRENT) not in ids:
        st.session_state[CURRENT] = ids[0] if ids else None
    if not mine:
        return None
    by_id = {c.id: c for c in mine}
    picked: str | None = column.selectbox(
        T.CONVERSATION_LABEL, ids, format_func=lambda i: _label(by_id[i]), key=CURRENT
    )
    return picked


def _label(c: Conversation) -> str:
    when = time.strftime("%m-%d %H:%M", time.localtime(c.updated_at))
    text = T.CONVERSATION_OPTION.format(
        title=c.title or T.CONVERSATION_UNTITLED, turns=c.turns, when=when
    )
    return str(text)


def start_conversation() -> None:
    """A new thread for this user alone (a button callback: before the page draws); an empty
    conversation on the page is new enough already."""
    mine = {c.id: c for c in guarded(service.conversations.all) or []}
    shown = mine.get(str(st.session_state.get(CURRENT) or ""))
    if shown is not None and not shown.turns:
        return
    made = guarded(service.conversations.new)
    if made is not None:
        st.session_state[CURRENT] = made.id


service, names = open_page(T.TITLE, T.CAPTION)
st.page_link(ROOT / "pages" / "recall.py", label=T.ASK_IN_NOTEBOOK, icon="🔎")
workspace = None
# An upload goes to the service as bytes: it stages and removes them (server-made names).
upload = st.file_uploader(
    T.WORKSPACE_UPLOAD, type=[s.lstrip(".") for s in ARCHIVE_SUFFIXES], key="agent-archive"
)
use_sample = st.checkbox(T.WORKSPACE_SAMPLE, value=upload is None, key="agent-sample")
if upload is None and use_sample:
    workspace = SAMPLE_PROJECT
elif upload is None:
    st.caption(T.WORKSPACE_NONE)
picker_col, new_col = st.columns([4, 1], vertical_alignment="bottom")
current = conversation_picker(service, picker_col)
new_col.button(T.NEW_CONVERSATION, key="agent-new", on_click=start_conversation)
conversation = st.container()
if current is not None:
    thread = current
    turns, hidden = guarded(lambda: service.conversations.turns(thread, HISTORY)) or ([], 0)
    with conversation:
        if hidden:
            st.caption(T.HIDDEN_TURNS.format(n=hidden))
        for turn in turns:
            show_turn(turn)

input_col, scope_col = st.columns([4, 1], vertical_alignment="bottom")
scope = scope_col.multiselect(
    T.SCOPE_LABEL,
    [T.SCOPE_ALL, *names],
    default=[T.SCOPE_ALL],
    format_func=lambda name: T.SCOPE_ALL_LABEL if name == T.SCOPE_ALL else f"@{name}",
    key="agent-scope",
)
message = input_col.chat_input(T.TASK_PLACEHOLDER, key="agent-input")

if message:
    mentioned, unknown, question = parse_mentions(message, names)
    if unknown:
        st.warning(
            inert(
                T.UNKNOWN_MENTION.format(
                    names=T.SEPARATOR.join(f"@{n}" for n in unknown),
                    known=T.SEPARATOR.join(names),
                )
            )
        )
    if mentioned:
        targets = None if T.SCOPE_ALL.removeprefix("@") in mentioned else mentioned
    else:
        targets = None if not scope or T.SCOPE_ALL in scope else scope
    if not question:
        st.warning(T.EMPTY_QUESTION)
        st.stop()
    if current is None:  # the first question of a fresh start opens the conversation
        current = service.conversations.new().id
        st.session_state[CURRENT] = current
    with conversation:
        with st.chat_message("user"):
            st.markdown(inert(message))
        with st.chat_message("assistant"):
            task_view = TaskView()
            try:
                result = service.tasks.run(
                    question,
                    targets,
                    workspace=workspace,
                    upload=(upload.name, upload.getvalue()) if upload is not None else None,
                    on_event=task_view,
                    conversation=current,
                )
            except Exception as exc:  # the page's boundary: a sentence, never a traceback
                task_view.close()
                show_error(exc)
            else:
                task_view.close()
                render_result(result.to_json(), key="agent-task-new")
