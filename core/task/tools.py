"""The task agent's tools and their budget: every call is bounded, traced and confined.

`ToolBox` runs one subtask's tool calls: `search_knowledge` (one fused search), and the
read-only `list_files`, `read_file` and `grep` over the workspace (which refuses any path outside
its root). Each call emits a `tool_call` event before it runs and a `tool_result` event after;
once the subtask's budget of calls is spent, further calls are refused without running. Tool
output reaches the model wrapped in <tool_output> tags: it is data, never instructions.
`TOOL_SPECS` are the argument schemas the LLM path binds as LangChain tools.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..errors import ZhixingError
from ..trace import (
    EventSink,
    ToolCallEvent,
    ToolResultEvent,
)
from .configuration import TaskContext
from .state import KnowledgeRef, knowledge_ref
from .workspace import TOOL_TIMEOUT_S, GrepHit, Workspace

__all__ = ["TOOL_SPECS", "ToolBox", "ToolRefused"]

_OUTPUT_CHARS = 6000  # of one tool result shown to the model
_EVENT_CHARS = 1500  # of one tool result carried in a trace event
_GREP_LIMIT = 60
_SEARCH_HITS = 6  # excerpts one search_knowledge call returns (each cut to 400 characters)


class SearchKnowledge(BaseModel):
    """Search the attached knowledge bases and get numbered excerpts back."""

    query: str = Field(description="What to look up, e.g. a clause topic or an API name.")


class ListFiles(BaseModel):
    """List the workspace's files that match a glob (paths relative to the workspace)."""

    glob: str = Field(default="**/*", description="e.g. **/*.java")


class ReadFile(BaseModel):
    """Read lines of a workspace file, numbered "12| code"."""

    path: str = Field(description="A path relative to the workspace, as list_files gives it.")
    start: int = Field(default=1, ge=1)
    end: int | None = Field(default=None, description="Last line (inclusive); none = to the end.")


class Grep(BaseModel):
    """Find lines matching a Python regular expression; answers path:line: text."""

    pattern: str
    glob: str = Field(default="**/*")
    ignore_case: bool = False


class RecordFinding(BaseModel):
    """Record one finding at a workspace line; the code line is read from the file itself."""

    title: str
    severity: str = Field(description="high, medium, low or info")
    file: str = Field(description="Workspace-relative path.")
    line: int = Field(ge=1)
    knowledge: list[int] = Field(
        default_factory=list, description="Numbers [K1], [K2]… of the knowledge it breaks."
    )
    explanation: str = ""


TOOL_SPECS: dict[str, type[BaseModel]] = {
    "search_knowledge": SearchKnowledge,
    "list_files": ListFiles,
    "read_file": ReadFile,
    "grep": Grep,
    "record_finding": RecordFinding,
}
WORKSPACE_TOOLS = ("list_files", "read_file", "grep")


class ToolRefused(ZhixingError):
    """A tool call was refused: unknown tool, bad arguments, or the budget is spent."""


class ToolBox:
    """Runs, bounds and traces the tool calls of one subtask."""

    def __init__(
        self,
        context: TaskContext,
        emit: EventSink,
        subtask: int,
        knowledge: list[KnowledgeRef],
    ) -> None:
        self.context = context
        self.emit = emit
        self.subtask = subtask
        self.knowledge = knowledge  # numbered K1..Kn; search_knowledge appends what it finds
        self.calls: list[dict[str, Any]] = []  # {"tool", "args", "ok"} in order

    @property
    def spent(self) -> bool:
        """Whether the subtask's budget of tool calls (findings aside) is used up."""
        return sum(1 for c in self.calls if c["counted"]) >= self.context.max_tool_calls

    @property
    def inspected(self) -> bool:
        """Whether a call has looked at something: the workspace's code when there is one
        (a knowledge search alone inspects no code), else the knowledge."""
        if self.context.workspace is None:
            return any(c["ok"] and c["counted"] for c in self.calls)
        return any(c["ok"] and c["tool"] in WORKSPACE_TOOLS for c in self.calls)

    def names(self) -> list[str]:
        """The tools this subtask may call (no workspace tools without a workspace)."""
        names = ["search_knowledge"]
        if self.context.workspace is not None:
            names += list(WORKSPACE_TOOLS)
        return names

    def handover(self, max_tool_calls: int) -> ToolBox:
        """This subtask's box for the offline executor that takes it over from the model: the
        same trace, its steps numbered after the model's, a budget of its own."""
        context = dataclasses.replace(self.context, max_tool_calls=max_tool_calls)
        box = ToolBox(context, self.emit, self.subtask, self.knowledge)
        box.calls = [{**c, "counted": False} for c in self.calls]
        return box

    def run(self, tool: str, args: dict[str, Any]) -> str:
        """Run one call and return its output as the model sees it (refusals included)."""
        _, output = self._traced(tool, args, lambda a: self._dispatch(tool, a))
        return f"<tool_output>\n{output[:_OUTPUT_CHARS]}\n</tool_output>"

    def grep_hits(self, pattern: str, glob: str = "**/*") -> list[GrepHit] | None:
        """Grep for the offline scan, through the same budget and trace; None when refused."""
        hits: list[GrepHit] = []

        def capture(args: dict[str, Any]) -> str:
            hits.extend(self._workspace().grep(args["pattern"], args["glob"], limit=_GREP_LIMIT))
            return _grep_text(hits)

        ok, _ = self._traced("grep", {"pattern": pattern, "glob": glob}, capture)
        return hits if ok else None

    def refuse(self, tool: str, reason: str) -> str:
        """Trace and answer a call that cannot run at all (its arguments were unreadable)."""

        def body(_: dict[str, Any]) -> str:
            raise ToolRefused(f"The call to {tool} was not run: {reason}.")

        _, output = self._traced(tool, {}, body)
        return f"<tool_output>\n{output}\n</tool_output>"

    def record(self, args: dict[str, Any], body: Callable[[dict[str, Any]], str]) -> str:
        """Trace a record_finding call; findings do not spend the tool budget."""
        _, output = self._traced("record_finding", args, body, counted=False)
        return f"<tool_output>\n{output}\n</tool_output>"

    def _traced(
        self,
        tool: str,
        args: dict[str, Any],
        body: Callable[[dict[str, Any]], str],
        *,
        counted: bool = True,
    ) -> tuple[bool, str]:
        step = len(self.calls) + 1
        self.emit(
            ToolCallEvent(node="tool_call", subtask=self.subtask, step=step, tool=tool, args=args)
        )
        try:
            if counted and self.spent:
                raise ToolRefused(
                    f"The budget of {self.context.max_tool_calls} tool calls for this subtask is"
                    " spent; conclude from what you have."
                )
            ok, output = True, body(args)
        except ZhixingError as exc:
            ok, output = False, f"Refused: {exc}"
        self.calls.append({"tool": tool, "args": args, "ok": ok, "counted": counted})
        self.emit(
            ToolResultEvent(
                node="tool_result",
                subtask=self.subtask,
                step=step,
                tool=tool,
                ok=ok,
                output=output[:_EVENT_CHARS],
            )
        )
        return ok, output

    # --- the tools ----------------------------------------------------------------------------

    def _dispatch(self, tool: str, args: dict[str, Any]) -> str:
        if tool not in self.names():
            raise ToolRefused(f"There is no tool {tool!r}; use one of {', '.join(self.names())}.")
        try:
            parsed = TOOL_SPECS[tool].model_validate(args)
        except ValidationError as exc:
            raise ToolRefused(
                f"The arguments of {tool} are invalid: {exc.errors()[0]['msg']}."
            ) from None
        if isinstance(parsed, SearchKnowledge):
            return self._search_knowledge(parsed.query)
        ws = self._workspace()
        # One deadline for the whole call: a grep's listing of files spends from it too.
        deadline = time.monotonic() + TOOL_TIMEOUT_S
        if isinstance(parsed, ListFiles):
            files = ws.list_files(parsed.glob, limit=300, deadline=deadline)
            return "\n".join(files) or "(no files match)"
        if isinstance(parsed, ReadFile):
            return ws.read_file(parsed.path, parsed.start, parsed.end, max_bytes=_OUTPUT_CHARS)
        assert isinstance(parsed, Grep)
        hits = ws.grep(
            parsed.pattern,
            parsed.glob,
            limit=_GREP_LIMIT,
            ignore_case=parsed.ignore_case,
            deadline=deadline,
        )
        return _grep_text(hits)

    def _workspace(self) -> Workspace:
        if self.context.workspace is None:
            raise ToolRefused("This task has no workspace; only search_knowledge is available.")
        return self.context.workspace

    def _search_knowledge(self, query: str) -> str:
        # One fused search (six strategies, no model call), not the agentic loop: the task's
        # research step ran that loop once already, and inside a subtask each of its rounds
        # costs the executing model's turn several more calls (a real 0.5B model on one slot
        # spent minutes per search_knowledge so, issue 34). The model reads the excerpts.
        lines = []
        for hit in self.context.search(query, _SEARCH_HITS):
            ref = knowledge_ref(hit, max_chars=400)
            if all(k.chunk_id != ref.chunk_id for k in self.knowledge):
                self.knowledge.append(ref)
            n = next(i for i, k in enumerate(self.knowledge, 1) if k.chunk_id == ref.chunk_id)
            lines.append(f"[K{n}] {ref.document} · {ref.section} · p.{ref.page}: {ref.text}")
        return "\n".join(lines) or "(nothing found in the knowledge bases)"


def _grep_text(hits: list[GrepHit]) -> str:
    if not hits:
        return "(no matches)"
    more = f"\n(stopped at {_GREP_LIMIT} matches)" if len(hits) >= _GREP_LIMIT else ""
    return "\n".join(str(h) for h in hits) + more
