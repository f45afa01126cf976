"""The task agent's runtime context: the dependencies and bounds every node reaches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..models import Hit

if TYPE_CHECKING:
    from ..ask import AgenticResult
    from ..llm.protocol import LLM, ToolCallingLLM
    from ..trace import AskSink
    from .workspace import Workspace

__all__ = ["MAX_CONFIRMATIONS", "MAX_SUBTASKS", "MAX_TOOL_CALLS", "TaskContext"]

MAX_SUBTASKS = 8
MAX_TOOL_CALLS = 6  # per subtask, workspace and knowledge tools together
MAX_CONFIRMATIONS = 30  # per run: the model's reviews of candidate findings


@dataclass(frozen=True)
class TaskContext:
    """The dependencies of one task run, passed as LangGraph's runtime context.

    `research(text, on_event)` runs the agentic knowledge search (docs/architecture.md §6) and returns its
    `AgenticResult`; `search(query, top_k)` is one plain fused search (a subtask's
    `search_knowledge`), and `lookup(query, top_k)` the same with the rules' rewrites, never a
    model call: the research looks up the clauses of the known audit topics with it (defaults
    to `search`). `llm` (core/llm/protocol.py) writes the
    plan and the revised plan; `chat` (the same model, if it can `invoke_tools`) executes
    subtasks with tool calling. Without them the run is offline: headings of the matching
    knowledge become subtasks and each subtask greps the workspace with patterns. `workspace`
    is optional: without one, subtasks only consult the knowledge.
    """

    research: Callable[[str, AskSink | None], AgenticResult]
    search: Callable[[str, int], list[Hit]]
    lookup: Callable[[str, int], list[Hit]] | None = None
    workspace: Workspace | None = None
    llm: LLM | None = None
    chat: ToolCallingLLM | None = None
    knowledge_bases: Sequence[str] = field(default_factory=tuple)
    max_subtasks: int = MAX_SUBTASKS
    max_tool_calls: int = MAX_TOOL_CALLS
    max_confirmations: int = MAX_CONFIRMATIONS

    def call_budget(self) -> dict[str, int]:
        """The most model calls the task agent itself may make, by step (the research's
        agentic search adds its own, a few per round)."""
        return {
            "plan": 2,
            "subtasks": self.max_subtasks * (self.max_tool_calls + 2),
            "confirmations": self.max_confirmations if self.workspace is not None else 0,
        }

    def __post_init__(self) -> None:
        if not 0 <= self.max_confirmations <= 500:
            raise ConfigError(
                f"max_confirmations must be between 0 and 500; got {self.max_confirmations}."
            )
        if not 1 <= self.max_subtasks <= 20:
            raise ConfigError(f"max_subtasks must be between 1 and 20; got {self.max_subtasks}.")
        if not 1 <= self.max_tool_calls <= 30:
            raise ConfigError(
                f"max_tool_calls must be between 1 and 30; got {self.max_tool_calls}."
            )
