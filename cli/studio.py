"""LangGraph Studio's entry: the two agent graphs, on this machine's Zhixing home.

`langgraph dev` reads langgraph.json at the top of the repository and loads `ask` (the agentic
retrieval loop, docs/architecture.md §6) and `task` (the task agent, §7) from this file. Both
are the graphs the app runs, node for node; a run opens the home that ZHIXING_HOME and the
saved settings name (once per process, as the `zhixing` command does) and takes its options
from the run's context, which Studio shows as a form:

    ask:  {"knowledge_bases": ["kb"], "max_rounds": 3, "top_k": 10}      input {"question": ...}
    task: {"knowledge_bases": ["kb"], "workspace": "/path/to/code"}      input {"task": ...}

With no knowledge bases named, a run searches all of them. The input and output are the flows'
schemas (core/ask/state.py `AskInput`/`AskOutput`, core/task/state.py `TaskInput`/`TaskOutput`),
not the whole state; a missing question or an unknown knowledge base fails with one sentence
(core/agents/binding.py).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

# pydantic derives Studio's forms only from this TypedDict on Python 3.11.
from typing_extensions import TypedDict

from zhixing.core.ask.configuration import AgentContext
from zhixing.core.ask.flow import build_bound_graph as build_ask_graph
from zhixing.core.config import Settings
from zhixing.core.home import owner_only_umask
from zhixing.core.logs import debug_log
from zhixing.core.service import KnowledgeService
from zhixing.core.task.configuration import TaskContext
from zhixing.core.task.flow import build_bound_graph as build_task_graph

__all__ = ["AskOptions", "TaskOptions", "ask", "close", "task"]


class AskOptions(TypedDict, total=False):
    """The options of an `ask` run (its context in Studio)."""

    knowledge_bases: list[str]  # none: every knowledge base
    max_rounds: int  # 1 to 5; 3 by default
    top_k: int  # hits kept per query; 10 by default


class TaskOptions(TypedDict, total=False):
    """The options of a `task` run (its context in Studio)."""

    knowledge_bases: list[str]  # none: every knowledge base
    workspace: str  # a folder of code to audit; none: the task only consults the knowledge
    max_rounds: int  # research rounds; 2 by default
    top_k: int  # 8 by default


_lock = threading.Lock()
_opened: KnowledgeService | None = None


def service() -> KnowledgeService:
    """The process's service on the configured home, opened on the first run."""
    global _opened
    with _lock:
        if _opened is None:
            settings = Settings.from_env()
            owner_only_umask()  # the home and all in it is this user's alone (core/home.py)
            debug_log(
                settings.home, level=settings.log_level, as_json=settings.log_format == "json"
            )
            _opened = KnowledgeService(settings)
        return _opened


def close() -> None:
    """Close the service (its Milvus Lite file admits one process): the next run reopens it."""
    global _opened
    with _lock:
        if _opened is not None:
            _opened.close()
            _opened = None


def _options(context: Any) -> dict[str, Any]:
    return dict(context) if isinstance(context, dict) else {}


def _names(options: dict[str, Any]) -> list[str] | None:
    names = options.get("knowledge_bases") or []
    return [names] if isinstance(names, str) else list(names) or None


def _ask_context(context: Any) -> AgentContext:
    options = _options(context)
    return service().search.agent_context(
        _names(options),
        top_k=int(options.get("top_k", 10)),
        max_rounds=int(options.get("max_rounds", 3)),
    )


def _task_context(context: Any) -> TaskContext:
    options = _options(context)
    workspace = options.get("workspace")
    return service().tasks.context(
        _names(options),
        workspace=Path(workspace) if workspace else None,
        top_k=int(options.get("top_k", 8)),
        max_rounds=int(options.get("max_rounds", 2)),
    )


ask = build_ask_graph(_ask_context, AskOptions)
task = build_task_graph(_task_context, TaskOptions)
