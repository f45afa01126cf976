"""Rendering a task run (docs/architecture.md §7) as it happens: research, plan before and after, each
subtask with its tool calls, then the report. A sink for `KnowledgeService.run_task(on_event=…)`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from app.rounds import RoundsView
from app.strings import agent as T
from app.widgets import inert

__all__ = ["TaskView", "render_result"]

_SHOWN_OUTPUT = 600  # characters of a tool result shown inline


class TaskView:
    def __init__(self) -> None:
        self._ctx = get_script_run_ctx()
        self._parent = st.container()
        self._research = self._parent.status(T.RESEARCH, expanded=True)
        self._rounds = RoundsView(parent=self._research)  # the research's rounds nest in it
        self._subtask: Any = None
        self._plan_before: list[str] = []

    def __call__(self, event: Mapping[str, Any]) -> None:
        if get_script_run_ctx() is None and self._ctx is not None:
            add_script_run_ctx(threading.current_thread(), self._ctx)
        node = event.get("node")
        if event.get("phase") == "research" and node != "research":
            self._rounds(event)
        elif event.get("phase") == "subtask" and self._subtask is not None:
            if node == "evaluate":
                self._subtask.caption(
                    f"search_knowledge: {'✓' if event.get('sufficient') else '…'}"
                )
        elif node == "research" and "evidence" in event:
            self._rounds.close()
            self._research.update(
                label=T.RESEARCH_DONE.format(
                    evidence=event.get("evidence", 0), sections=len(event.get("sections", []))
                ),
                state="complete",
                expanded=False,
            )
        elif node == "plan":
            self._plan_before = list(event.get("plan", []))
            with self._parent.expander(T.PLAN_BEFORE, expanded=False):
                st.markdown(
                    inert("\n".join(f"{i}. {s}" for i, s in enumerate(self._plan_before, 1)))
                )
        elif node == "replan":
            plan = list(event.get("plan", []))
            self._parent.info(T.PLAN_CHANGED.format(before=len(self._plan_before), after=len(plan)))
            with self._parent.expander(T.PLAN_AFTER, expanded=True):
                st.markdown(inert("\n".join(_subtask_line(i, s) for i, s in enumerate(plan, 1))))
        elif node == "subtask":
            self._subtask = self._parent.status(
                inert(T.SUBTASK_RUNNING.format(n=event["subtask"], title=event["title"])),
                expanded=True,
            )
            if event.get("goal"):
                self._subtask.caption(inert(event["goal"]))
        elif node == "tool_call" and self._subtask is not None:
            args = ", ".join(
                f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in event["args"].items()
            )
            self._subtask.markdown(inert(T.TOOL_CALL.format(tool=event["tool"], args=args)))
        elif node == "tool_result" and self._subtask is not None:
            label = T.TOOL_RESULT_OK if event.get("ok") else T.TOOL_RESULT_REFUSED
            self._subtask.code(f"{label}: {str(event.get('output', ''))[:_SHOWN_OUTPUT]}")
        elif node == "finding" and self._subtask is not None:
            f = event["finding"]
            self._subtask.markdown(
                inert(
                    T.FINDING.format(
                        severity=f.get("severity"),
                        title=f.get("title"),
                        file=f.get("file"),
                        line=f.get("line"),
                    )
                )  # fmt: skip
            )
        elif node == "subtask_done" and self._subtask is not None:
            self._subtask.update(
                label=inert(
                    T.SUBTASK_DONE.format(
                        n=event["subtask"],
                        title=event["title"],
                        findings=event.get("findings", 0),
                        calls=event.get("tool_calls", 0),
                    )
                ),
                state="complete",
                expanded=False,
            )
            self._subtask = None

    def close(self) -> None:
        self._rounds.close()
        if self._subtask is not None:
            self._subtask.update(state="complete", expanded=False)


def _subtask_line(n: int, subtask: Mapping[str, Any]) -> str:
    refs = "; ".join(
        f"{k.get('section')} — {k.get('document')} p.{k.get('page')}"
        for k in subtask.get("knowledge", [])[:2]
    )
    return f"{n}. **{subtask.get('title')}** — {subtask.get('goal', '')}" + (
        f" *({refs})*" if refs else ""
    )


def render_result(result: Mapping[str, Any], key: str) -> None:
    """The report, with download buttons (Markdown and the `run --json` shape)."""
    st.subheader(T.REPORT)
    st.caption(T.TASK_FINDINGS.format(n=len(result.get("findings", []))))
    st.markdown(inert(result["report"]))
    left, right = st.columns(2)
    left.download_button(
        T.DOWNLOAD, result["report"], file_name="zhixing-report.md", mime="text/markdown",
        key=f"{key}-md",
    )  # fmt: skip
    right.download_button(
        T.DOWNLOAD_JSON,
        json.dumps(result, ensure_ascii=False, indent=2),
        file_name="zhixing-report.json",
        mime="application/json",
        key=f"{key}-json",
    )
