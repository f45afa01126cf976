"""The way a subtask runs with a model, and the structured turns of a model that cannot call tools.

A small model behind llama-server cannot call tools: it writes its calls as text, often broken,
or answers in prose, and its tool-calling turns inspect nothing. It still drives the subtask,
through structured turns: each turn is one ordinary structured call (`task_turn`, `ToolTurn`:
a thought, then the tool it chooses, then that tool's arguments as flat fields), run by the
same `ToolBox` with the same budget and workspace checks, its result fed back in the next
turn's prompt. `drive` picks the way, and the report names it:

- "tools": tool calling, unless the endpoint is known not to return `tool_calls`;
- "structured turns": when the endpoint returns no `tool_calls` (its probed capabilities say
  so, or, where they say nothing, an earlier subtask of the run showed it), or a tool-calling
  turn held no call (none in `tool_calls`, none readable in its text) while nothing had been
  inspected; the turns left of the subtask's budget go on as structured turns. A call repeated
  is not run again (the turn is spent, the tool budget is not), and a finding stands only on a
  line a turn has shown the model;
- "offline, model reviewing": when the turns are spent (a turn that cannot be read spends one
  too) and the model inspected nothing, the offline executor runs the subtask and the model only
  reviews its candidates (core/task/confirm.py, in the execute node). A subtask never ends
  empty-handed.

Whichever way, the offline scan runs beside the model and is merged: the model adds to what the
offline run finds, never less.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import LLMError, LLMOutputError
from . import dataflow, offline
from .prompts import TASK_TURN, ToolTurn
from .state import Finding, Subtask
from .toolcalling import execute_with_tools, record
from .tools import ToolBox, ToolRefused

__all__ = ["REVIEWING", "TOOLS", "TURNS", "Driven", "drive", "execute_structured"]

TOOLS = "tools"
TURNS = "structured turns"
REVIEWING = "offline, model reviewing"

# The offline executor's budget when it takes a subtask over or runs beside the model: the most
# TaskContext allows; the scan greps each of its patterns once.
_SCAN_CALLS = 30
# Unreadable structured turns in a row that end the turns early: each already holds one repair
# request, so two are four replies in a row that were not the schema, and on a one-slot CPU
# server each costs ~10 s (issue 34's measured rates); the offline executor takes over.
_UNREADABLE_IN_A_ROW = 2
# What a turn's prompt shows of the steps so far: a 0.5B model with an 8k context reads the
# last few results whole and the older ones only by their first lines.
_RECENT_STEPS = 3
_STEP_CHARS = 1500
_OLD_STEP_CHARS = 200
_FILES_SHOWN = 80
_KNOWLEDGE_CHARS = 400
# What a tool's output shows of the code: a grep hit "path:12: text", a line read "12| text".
_HIT = re.compile(r"^(.+?):(\d+): ", re.M)
_LINE = re.compile(r"^(\d+)\| ", re.M)
# The arguments each tool cannot run without (read from the turn's flat fields).
_NEEDS = {"grep": ("pattern",), "read_file": ("path",), "record_finding": ("file", "line")}


@dataclass(frozen=True)
class Driven:
    """What a subtask driven by the model came to, and which way it ran."""

    findings: list[Finding]
    summary: str
    way: str  # TOOLS | TURNS | REVIEWING
    tool_calls: int
    tool_turns: bool | None = None  # what the run knows now of the model's tool-calling turns


def drive(
    task: str, subtask: Subtask, box: ToolBox, tool_turns: bool | None, *, chinese: bool
) -> Driven:
    """Run one subtask with the context's chat model, choosing the way it can be driven (by
    `tool_turns`, what the run has seen of the model's tool-calling turns so far); the offline
    scan merged in. Raises LLMError when the endpoint fails (the caller goes offline)."""
    ctx = box.context
    chat = ctx.chat
    assert chat is not None, "drive needs the context's chat model"
    budget = ctx.max_tool_calls + 2
    findings: list[Finding] = []
    summary, way, turns = "", TOOLS, budget
    if tool_turns is None:
        tool_turns = _probed_tool_turns(chat)
    if tool_turns is not False:
        run = execute_with_tools(task, subtask, box, chat)
        findings, summary = run.findings, run.summary
        if run.called:
            tool_turns = True
        elif run.empty and tool_turns is None:
            tool_turns = False  # later subtasks go straight to structured turns
        turns = budget - run.turns if run.empty else 0
    if turns > 0:
        way = TURNS
        more, summary = execute_structured(task, subtask, box, chat, turns=turns)
        findings = [*findings, *more]
    if not box.inspected:
        handed = _handed_over(subtask, box, findings, chinese=chinese)
        return dataclasses.replace(handed, tool_turns=tool_turns)
    if ctx.workspace is None:
        return Driven(findings, summary or _recorded(findings), way, len(box.calls), tool_turns)
    # Silent, and outside the model's count: the trace and the budget show what the model did.
    scan_ctx = dataclasses.replace(ctx, max_tool_calls=_SCAN_CALLS)
    scan_box = ToolBox(scan_ctx, lambda _: None, box.subtask, list(subtask.knowledge))
    scanned, scan_summary = offline.scan(subtask, scan_box, chinese=chinese)
    if not re.search(r"\w", summary.replace("```json", "")):  # a summary of a bare fence
        summary = scan_summary
    merged = dataflow.merge(findings, scanned)
    return Driven(merged, summary, way, len(box.calls), tool_turns)


def execute_structured(
    task: str, subtask: Subtask, box: ToolBox, llm: Any, *, turns: int
) -> tuple[list[Finding], str]:
    """Run a subtask through at most `turns` structured turns of `llm` (an `LLM`); return the
    findings it recorded and its summary ("" when it never said done)."""
    findings: list[Finding] = []
    steps: list[str] = []
    files = "(no workspace)"
    if box.context.workspace is not None:
        files = "\n".join(box.context.workspace.list_files(limit=_FILES_SHOWN)) or "(empty)"
    unreadable = 0
    seen: set[tuple[str, int]] = set()  # the (file, line)s the turns have shown the model
    asked: dict[str, int] = {}  # each call made, by its step number
    for left in range(turns, 0, -1):
        variables = _variables(task, subtask, box, files, steps, left)
        try:
            turn = llm.call(TASK_TURN, variables)
            if not isinstance(turn, ToolTurn):
                raise LLMOutputError("The model's turn was not a ToolTurn.")
        except LLMOutputError:
            unreadable += 1
            steps.append("(that reply could not be read: answer with one JSON object)")
            if unreadable >= _UNREADABLE_IN_A_ROW:
                break
            continue
        unreadable = 0
        if turn.tool == "done":
            return findings, turn.thought.strip()
        args = _arguments(turn, subtask)
        shown = {k: v for k, v in args.items() if k != "explanation"}
        call = f"{turn.tool} {json.dumps(shown, ensure_ascii=False)}"
        if call in asked:  # a small model repeats itself: the turn is spent, the budget is not
            steps.append(f"{call}\n(the same call as step {asked[call]}; its result is there)")
            continue
        asked[call] = len(steps) + 1
        output = _run(turn.tool, args, subtask, box, (findings, seen))
        steps.append(f"{call}\n{output}")
    return findings, ""


def _probed_tool_turns(chat: object) -> bool | None:
    """Whether the chat model's tool-calling turns hold calls, as the endpoint's probed
    capabilities say (`LLMClient.capabilities()`), else None (try)."""
    probe = getattr(chat, "capabilities", None)
    try:
        found = probe() if callable(probe) else probe
    except LLMError:
        found = None  # a probe that failed says nothing about what the model can do
    value = getattr(found, "tool_calls", None)
    return value if isinstance(value, bool) else None


def _arguments(turn: ToolTurn, subtask: Subtask) -> dict[str, Any]:
    """The tool's own arguments, from the turn's flat fields."""
    if turn.tool == "grep":
        return {"pattern": turn.pattern, "glob": turn.glob or "**/*"}
    if turn.tool == "read_file":
        span = {"start": turn.start or 1} | ({"end": turn.end} if turn.end else {})
        return {"path": turn.path} | span
    if turn.tool == "list_files":
        return {"glob": turn.glob or "**/*"}
    if turn.tool == "search_knowledge":
        return {"query": turn.query or turn.thought}
    return {
        "title": turn.title or subtask.title,
        "severity": turn.severity or "medium",
        "file": turn.path,
        "line": turn.line,
        "explanation": turn.thought,
    }


def _run(
    tool: str,
    args: dict[str, Any],
    subtask: Subtask,
    box: ToolBox,
    found: tuple[list[Finding], set[tuple[str, int]]],
) -> str:
    """Run one turn's call through the box: traced, budgeted, confined like any tool call. A
    finding stands only on a line a turn has shown the model (a grep hit or a line read)."""
    into, seen = found
    missing = [name for name in _NEEDS.get(tool, ()) if args.get(name) in ("", None)]
    if missing:
        return box.refuse(tool, f"it needs {' and '.join(missing)}")
    if tool == "record_finding":

        def checked(a: dict[str, Any]) -> str:
            if (_path(str(a["file"])), a["line"]) not in seen:
                raise ToolRefused(
                    f"Line {a['line']} of {a['file']} has not been shown yet; read it first."
                )
            return record(a, subtask, box, into)

        return box.record(args, checked)
    output = box.run(tool, args)
    if tool == "grep":
        seen.update((_path(p), int(n)) for p, n in _HIT.findall(output))
    elif tool == "read_file":
        seen.update((_path(str(args["path"])), int(n)) for n in _LINE.findall(output))
    return output


def _path(path: str) -> str:
    return path.replace("\\", "/").strip().removeprefix("./")


def _variables(
    task: str, subtask: Subtask, box: ToolBox, files: str, steps: list[str], left: int
) -> dict[str, object]:
    knowledge = "\n".join(
        f"[K{n}] {k.document} · {k.section} · p.{k.page}: {k.text[:_KNOWLEDGE_CHARS]}"
        for n, k in enumerate(box.knowledge, 1)
    )
    return {
        "task": task,
        "subtask": subtask.title,
        "goal": subtask.goal,
        "knowledge": knowledge or "(none yet; use search_knowledge)",
        "patterns": "\n".join(subtask.patterns) or "(none)",
        "files": files,
        "tools": ", ".join([*box.names(), "record_finding", "done"]),
        "steps": _history(steps) or "(none yet)",
        "left": left,
    }


def _history(steps: list[str]) -> str:
    """The steps so far, numbered: the recent ones whole, the older cut short."""
    recent = len(steps) - _RECENT_STEPS
    return "\n".join(
        f"{n}. {_cut(step, _STEP_CHARS if n > recent else _OLD_STEP_CHARS)}"
        for n, step in enumerate(steps, 1)
    )


def _cut(step: str, limit: int) -> str:
    if len(step) <= limit:
        return step
    closing = "\n…\n</tool_output>" if "<tool_output>" in step[:limit] else " …"
    return step[:limit] + closing


def _handed_over(
    subtask: Subtask, box: ToolBox, findings: list[Finding], *, chinese: bool
) -> Driven:
    """The offline executor runs the subtask the model inspected nothing of, in its trace."""
    scan_box = box.handover(_SCAN_CALLS)
    if box.context.workspace is None:
        summary = offline.consult(subtask, scan_box, chinese=chinese)
        return Driven(findings, summary, REVIEWING, len(scan_box.calls))
    scanned, summary = offline.scan(subtask, scan_box, chinese=chinese)
    return Driven(dataflow.merge(findings, scanned), summary, REVIEWING, len(scan_box.calls))


def _recorded(findings: list[Finding]) -> str:
    return f"{len(findings)} finding(s) recorded."
