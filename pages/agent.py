"""Agent (智能体): a chat whose every question runs the agentic loop, round by round, and
tasks (DESIGN §7) that research the knowledge, re-plan, work through a workspace and report.

The conversation is the run log (`RunStore`): every `ask` is stored with its answer and trace,
so a reload replays it. "New conversation" moves a stored marker past the runs shown so far.
The last task's report stays on the page (session state) until the next one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from app.rounds import RoundsView, render_answer
from app.services import session_service
from app.strings import agent as T
from app.tasks import TaskView, render_result
from app.widgets import ROOT, empty_state, inert, kb_names, show_error
from core.agent.workspace import ARCHIVE_SUFFIXES
from core.store.runs import RunStore

SAMPLE_PROJECT = ROOT / "samples" / "springboot-shop"

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
        st.markdown(inert(run["question"]))  # another user's words, maybe
        st.caption(inert(T.SCOPE_NOTE.format(names="、".join(run["kbs"]))))
    with st.chat_message("assistant"):
        RoundsView(live=False).replay(run["trace"])
        render_answer(run["answer"])


service = session_service()
st.title(T.TITLE)
st.caption(T.CAPTION)
if not empty_state(service):
    st.stop()

runs = RunStore(service.catalog)
names = kb_names(service)
mode = (
    st.segmented_control(
        T.MODE_LABEL, [T.MODE_ASK, T.MODE_TASK], default=T.MODE_ASK, key="agent-mode"
    )
    or T.MODE_ASK
)
workspace = None
if mode == T.MODE_TASK:
    upload = st.file_uploader(
        T.WORKSPACE_UPLOAD, type=[s.lstrip(".") for s in ARCHIVE_SUFFIXES], key="agent-archive"
    )
    use_sample = st.checkbox(T.WORKSPACE_SAMPLE, value=upload is None, key="agent-sample")
    if upload is not None:
        staged = service.settings.home / "uploads" / "workspaces" / upload.name
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.write_bytes(upload.getvalue())
        workspace = staged  # unpacked (after its entries are checked) into a per-run folder
    elif use_sample:
        workspace = SAMPLE_PROJECT
    else:
        st.caption(T.WORKSPACE_NONE)
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
placeholder = T.TASK_PLACEHOLDER if mode == T.MODE_TASK else T.CHAT_PLACEHOLDER
message = input_col.chat_input(placeholder, key="agent-input")
if mode == T.MODE_TASK and not message and "agent-task" in st.session_state:
    with conversation:
        with st.chat_message("user"):
            st.markdown(inert(st.session_state["agent-task"]["task"]))
        with st.chat_message("assistant"):
            render_result(st.session_state["agent-task"], key="agent-task-last")

if message:
    mentioned, unknown, question = parse_mentions(message, names)
    if unknown:
        st.warning(
            inert(
                T.UNKNOWN_MENTION.format(
                    names="、".join(f"@{n}" for n in unknown), known="、".join(names)
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
    if mode == T.MODE_TASK:
        with conversation:
            with st.chat_message("user"):
                st.markdown(inert(message))
            with st.chat_message("assistant"):
                view = TaskView()
                try:
                    result = service.run_task(question, targets, workspace=workspace, on_event=view)
                except Exception as exc:  # the page's boundary: a sentence, never a traceback
                    view.close()
                    show_error(exc)
                else:
                    view.close()
                    st.session_state["agent-task"] = result.to_json()
                    render_result(st.session_state["agent-task"], key="agent-task-new")
        st.stop()
    with conversation:
        with st.chat_message("user"):
            st.markdown(inert(message))
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
