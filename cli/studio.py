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
not the whole state. A missing question, an option outside its bounds (shown in the form) or an
unknown knowledge base fails with one sentence, which reaches the client (core/agents/binding.py).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

# pydantic derives Studio's forms only from this TypedDict on Python 3.11.
from typing_extensions import TypedDict

from zhixing.core.ask.configuration import MAX_ROUNDS_RANGE, AgentContext
from zhixing.core.ask.flow import build_bound_graph as build_ask_graph
from zhixing.core.config import Settings
from zhixing.core.home import owner_only_umask
from zhixing.core.logs import debug_log
from zhixing.core.service import MAX_TOP_K, KnowledgeService
from zhixing.core.task.configuration import TaskContext
from zhixing.core.task.flow import build_bound_graph as build_task_graph

__all__ = ["AskOptions", "TaskOptions", "ask", "close", "task"]


# Each option carries its bounds and a line of help, which Studio's context form shows; a value
# outside them is refused in one sentence (`_options`), never clamped.
_KnowledgeBases = Annotated[
    list[str], Field(description="Names of the knowledge bases to search; none: every one.")
]
_Rounds = Annotated[int, Field(ge=MAX_ROUNDS_RANGE[0], le=MAX_ROUNDS_RANGE[1])]
_TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]


class AskOptions(TypedDict, total=False):
    """The options of an `ask` run (its context in Studio)."""

    knowledge_bases: _KnowledgeBases
    max_rounds: Annotated[_Rounds, Field(description="Search rounds before answering; 3 if unset.")]
    top_k: Annotated[_TopK, Field(description="Hits kept per query; 10 if unset.")]


class TaskOptions(TypedDict, total=False):
    """The options of a `task` run (its context in Studio)."""

    knowledge_bases: _KnowledgeBases
    workspace: Annotated[
        str, Field(description="A folder of code to audit; none: the task consults the knowledge.")
    ]
    max_rounds: Annotated[_Rounds, Field(description="Research rounds; 2 if unset.")]
    top_k: Annotated[_TopK, Field(description="Hits kept per query; 8 if unset.")]


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


def _options(context: Any, schema: type) -> dict[str, Any]:
    """The run's options checked against `schema`, or a ValueError with the sentence that says
    which one is wrong (the server checks a context against no schema, and shows the client the
    message of a built-in exception only: core/agents/binding.py)."""
    options = dict(context) if isinstance(context, dict) else {}
    if isinstance(options.get("knowledge_bases"), str):  # one name, typed without brackets
        options["knowledge_bases"] = [options["knowledge_bases"]]
    try:
        checked: dict[str, Any] = TypeAdapter(schema).validate_python(options)
    except ValidationError as error:
        raise ValueError(_option_sentence(error)) from None
    return checked


def _option_sentence(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    said = first["msg"].removeprefix("Input ").removeprefix("Value ")
    shown = repr(first.get("input"))
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f'The run\'s option "{where}" {said}, not {shown}{more}.'


def _names(options: dict[str, Any]) -> list[str] | None:
    return list(options.get("knowledge_bases") or []) or None


def _ask_context(context: Any) -> AgentContext:
    options = _options(context, AskOptions)
    return service().search.agent_context(
        _names(options),
        top_k=options.get("top_k", 10),
        max_rounds=options.get("max_rounds", 3),
    )


def _task_context(context: Any) -> TaskContext:
    options = _options(context, TaskOptions)
    workspace = options.get("workspace")
    return service().tasks.context(
        _names(options),
        workspace=Path(workspace) if workspace else None,
        top_k=options.get("top_k", 8),
        max_rounds=options.get("max_rounds", 2),
    )


ask = build_ask_graph(_ask_context, AskOptions)
task = build_task_graph(_task_context, TaskOptions)
