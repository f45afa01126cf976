"""Rendering a task run (docs/architecture.md §7) as it happens: research, plan before and after, each
subtask with its tool calls, then the report. A sink for `KnowledgeService.run_task(on_event=…)`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, cast

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from ..core.service import KnowledgeService
from ..core.trace import (
    AnalysisEvent,
    AskEvent,
    BudgetEvent,
    FindingEvent,
    ReplanEvent,
    ResearchEvent,
    SubtaskDoneEvent,
    SubtaskEvent,
    TaskPlanEvent,
    ToolCallEvent,
    ToolResultEvent,
    TraceEvent,
)
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
        if "phase" in event:  # the agentic search, inside the research or a subtask
            self._search(cast(AskEvent, event))
            return
        match event["node"]:
            case "research" if "evidence" in event:
                done = cast(ResearchEvent, event)
                self._rounds.close()
                self._research.update(
                    label=T.RESEARCH_DONE.format(
                        evidence=done["evidence"], sections=len(done["sections"])
                    ),
                    state="complete",
                    expanded=False,
                )
            case "budget":
                b = cast(BudgetEvent, event)
                self._parent.caption(
                    T.BUDGET.format(calls=b["calls"], confirmations=b["parts"]["confirmations"])
                )
            case "analysis" if cast(AnalysisEvent, event)["done"]:
                a = cast(AnalysisEvent, event)
                self._research.caption(
                    T.ANALYSIS.format(
                        files=a["files"], seconds=a["seconds"], findings=a["findings"]
                    )
                )
            case "plan":
                self._plan_before = list(cast(TaskPlanEvent, event)["plan"])
                with self._parent.expander(T.PLAN_BEFORE, expanded=False):
                    st.markdown(
                        inert("\n".join(f"{i}. {s}" for i, s in enumerate(self._plan_before, 1)))
                    )
            case "replan":
                plan = list(cast(ReplanEvent, event)["plan"])
                self._parent.info(
                    T.PLAN_CHANGED.format(before=len(self._plan_before), after=len(plan))
                )
                with self._parent.expander(T.PLAN_AFTER, expanded=True):
                    st.markdown(
                        inert("\n".join(_subtask_line(i, s) for i, s in enumerate(plan, 1)))
                    )
            case "subtask":
                sub = cast(SubtaskEvent, event)
                self._subtask = self._parent.status(
                    inert(T.SUBTASK_RUNNING.format(n=sub["subtask"], title=sub["title"])),
                    expanded=True,
                )
                if sub.get("goal"):
                    self._subtask.caption(inert(sub["goal"]))
            case "tool_call" if self._subtask is not None:
                call = cast(ToolCallEvent, event)
                args = ", ".join(
                    f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call["args"].items()
                )
                self._subtask.markdown(inert(T.TOOL_CALL.format(tool=call["tool"], args=args)))
            case "tool_result" if self._subtask is not None:
                result = cast(ToolResultEvent, event)
                label = T.TOOL_RESULT_OK if result.get("ok") else T.TOOL_RESULT_REFUSED
                self._subtask.code(f"{label}: {str(result.get('output', ''))[:_SHOWN_OUTPUT]}")
            case "finding" if self._subtask is not None:
                f = cast(FindingEvent, event)["finding"]
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
            case "subtask_done" if self._subtask is not None:
                done_ = cast(SubtaskDoneEvent, event)
                self._subtask.update(
                    label=inert(
                        T.SUBTASK_DONE.format(
                            n=done_["subtask"],
                            title=done_["title"],
                            findings=done_.get("findings", 0),
                            calls=done_.get("tool_calls", 0),
                        )
                    ),
                    state="complete",
                    expanded=False,
                )
                self._subtask = None
            case _:  # a research probe, the report: the page shows the result itself
                pass

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
            KnowledgeService.findings_text(findings, "sarif"),
            "zhixing-findings.sarif",
            "application/sarif+json",
        ),
        (
            T.DOWNLOAD_CSV,
            KnowledgeService.findings_text(findings, "csv"),
            "zhixing-findings.csv",
            "text/csv",
        ),
    )
    for column, (label, data, name, mime) in zip(
        st.columns(len(downloads)), downloads, strict=True
    ):
        column.download_button(label, data, file_name=name, mime=mime, key=f"{key}-{name}")
