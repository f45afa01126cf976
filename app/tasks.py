"""Rendering a task run (docs/architecture.md §7) as it happens: research, plan before and after, each
subtask with its tool calls, then the report. A sink for `service.tasks.run(on_event=…)`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from ..core.service import findings_text
from ..core.trace import AskEvent, TaskEvent, TraceEvent, is_search
from .rounds import RoundsView
from .strings import agent as T
from .widgets import inert

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

    def __call__(self, event: TraceEvent) -> None:
        """The page's dispatcher of the task agent's trace (core/trace.py)."""
        if get_script_run_ctx() is None and self._ctx is not None:
            add_script_run_ctx(threading.current_thread(), self._ctx)
        if is_search(event):  # the agentic search, inside the research or a subtask
            self._search(event)
        elif event["node"] == "research":
            self._rounds.close()
            self._research.update(
                label=T.RESEARCH_DONE.format(
                    evidence=event["evidence"], sections=len(event["sections"])
                ),
                state="complete",
                expanded=False,
            )
        elif event["node"] == "budget":
            self._parent.caption(
                T.BUDGET.format(calls=event["calls"], confirmations=event["parts"]["confirmations"])
            )
        elif event["node"] == "analysis" and event["done"]:
            self._research.caption(
                T.ANALYSIS.format(
                    files=event["files"], seconds=event["seconds"], findings=event["findings"]
                )
            )
        elif event["node"] == "task_plan":
            self._plan_before = list(event["plan"])
            with self._parent.expander(T.PLAN_BEFORE, expanded=False):
                st.markdown(
                    inert("\n".join(f"{i}. {s}" for i, s in enumerate(self._plan_before, 1)))
                )
        elif event["node"] == "replan":
            plan = list(event["plan"])
            self._parent.info(T.PLAN_CHANGED.format(before=len(self._plan_before), after=len(plan)))
            with self._parent.expander(T.PLAN_AFTER, expanded=True):
                st.markdown(inert("\n".join(_subtask_line(i, s) for i, s in enumerate(plan, 1))))
        elif event["node"] == "subtask":
            self._subtask = self._parent.status(
                inert(T.SUBTASK_RUNNING.format(n=event["subtask"], title=event["title"])),
                expanded=True,
            )
            if event.get("goal"):
                self._subtask.caption(inert(event["goal"]))
        elif self._subtask is not None:
            self._in_subtask(self._subtask, event)
        # A research probe, the report: the page shows the result itself.

    def _in_subtask(self, box: Any, event: TaskEvent) -> None:
        """A subtask's tool calls, their results, its findings and its end."""
        if event["node"] == "tool_call":
            args = ", ".join(
                f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in event["args"].items()
            )
            box.markdown(inert(T.TOOL_CALL.format(tool=event["tool"], args=args)))
        elif event["node"] == "tool_result":
            label = T.TOOL_RESULT_OK if event.get("ok") else T.TOOL_RESULT_REFUSED
            box.code(f"{label}: {str(event.get('output', ''))[:_SHOWN_OUTPUT]}")
        elif event["node"] == "finding":
            f = event["finding"]
            box.markdown(
                inert(
                    T.FINDING.format(
                        severity=f.get("severity"),
                        title=f.get("title"),
                        file=f.get("file"),
                        line=f.get("line"),
                    )
                )
            )
        elif event["node"] == "subtask_done":
            box.update(
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

    def _search(self, event: AskEvent) -> None:
        if event.get("phase") == "research":
            self._rounds(event)
        elif self._subtask is not None and event["node"] == "evaluate":
            self._subtask.caption(f"search_knowledge: {'✓' if event['sufficient'] else '…'}")

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
    for warning in result.get("warnings", []):  # e.g. no workspace: nothing was audited
        st.warning(inert(warning))
    st.caption(T.TASK_FINDINGS.format(n=len(result.get("findings", []))))
    st.markdown(inert(result["report"]))
    findings = result.get("findings", [])
    downloads = (  # label, data, file name, MIME type
        (T.DOWNLOAD, result["report"], "zhixing-report.md", "text/markdown"),
        (
            T.DOWNLOAD_JSON,
            json.dumps(result, ensure_ascii=False, indent=2),
            "zhixing-report.json",
            "application/json",
        ),
        (
            T.DOWNLOAD_SARIF,
            findings_text(findings, "sarif"),
            "zhixing-findings.sarif",
            "application/sarif+json",
        ),
        (
            T.DOWNLOAD_CSV,
            findings_text(findings, "csv"),
            "zhixing-findings.csv",
            "text/csv",
        ),
    )
    for column, (label, data, name, mime) in zip(
        st.columns(len(downloads)), downloads, strict=True
    ):
        column.download_button(label, data, file_name=name, mime=mime, key=f"{key}-{name}")
