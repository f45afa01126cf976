"""Executing a subtask with LangChain tool calling: the model picks tools, the ToolBox runs them.

The loop is bounded twice: the ToolBox refuses calls past the subtask's budget, and the model
gets at most budget + 2 turns. Each tool result goes back to the model as a ToolMessage, fenced
as data. A finding the model records is checked against the workspace (the file and line must
exist; the code line is read from the file, not taken from the model).

The model is reached through `LLMClient.invoke_tools`: langchain-openai stays inside `core.llm`.

A small model behind a server that builds the tool grammar often writes its call as text: bare
JSON, or JSON in a ```json fence, in `content`, with `tool_calls` empty. Such a reply is read as
the call it means (`text_calls`), so its tools run. A turn with neither is the model's summary
once it has inspected something; before that it is no step at all, and the loop stops with
`ToolRun.empty` set, so the caller goes on with structured turns (core/task/turns.py).
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ..errors import LLMError
from .audit_rules import Topic, topic_named
from .prompts import EXECUTOR_SYSTEM
from .state import Finding, KnowledgeRef, Subtask
from .tools import TOOL_SPECS, RecordFinding, ToolBox, ToolRefused

__all__ = ["ToolRun", "execute_with_tools", "record", "text_calls"]

_MAX_FINDINGS = 12  # per subtask
_SEVERITIES = ("high", "medium", "low", "info")
_NUMBERED = re.compile(r"^\d+\| ?")
# Program text: a weakness of a known topic is found in these, or in the files its own rules
# read (a secret in a .properties file, unescaped HTML in a template); a model's finding on a
# line of anything else (a setting's name in a configuration file) is refused.
_SOURCE_SUFFIXES = frozenset(
    [
        ".java",
        ".kt",
        ".kts",
        ".groovy",
        ".scala",
        ".jsp",
        ".jspx",
        ".js",
        ".jsx",
        ".ts",
        ".tsx",
        ".vue",
        ".py",
        ".rb",
        ".php",
        ".go",
        ".cs",
        ".c",
        ".cc",
        ".cpp",
        ".h",
        ".hpp",
        ".rs",
        ".swift",
        ".m",
        ".sql",
        ".sh",
    ]
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)(?:```|$)", re.S)


def _tool_defs(names: list[str]) -> list[dict[str, Any]]:
    defs = []
    for name in [*names, "record_finding"]:
        spec = TOOL_SPECS[name]
        defs.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": (spec.__doc__ or name).strip(),
                    "parameters": spec.model_json_schema(),
                },
            }
        )
    return defs


def _brief(task: str, subtask: Subtask, box: ToolBox) -> str:
    knowledge = "\n".join(
        f"[K{n}] {k.document} · {k.section} · p.{k.page}: {k.text}"
        for n, k in enumerate(box.knowledge, 1)
    )
    files = ""
    if box.context.workspace is not None:
        files = "\n".join(box.context.workspace.list_files(limit=120))
    hints = "\n".join(subtask.patterns) or "(none)"
    return (
        f"Task: {task}\nSubtask: {subtask.title}\nGoal: {subtask.goal}\n"
        f"Knowledge:\n<knowledge>\n{knowledge or '(none yet; use search_knowledge)'}\n</knowledge>\n"
        f"Grep patterns worth trying:\n{hints}\n"
        f"Workspace files:\n<files>\n{files or '(no workspace)'}\n</files>"
    )


@dataclass
class ToolRun:
    """What the tool-calling turns of one subtask came to."""

    findings: list[Finding]
    summary: str
    turns: int  # the turns spent, out of the subtask's budget + 2
    empty: bool = False  # it stopped at a turn without a call while nothing was inspected
    called: bool = False  # some turn held a call (in tool_calls, or written as text)


def execute_with_tools(task: str, subtask: Subtask, box: ToolBox, chat: Any) -> ToolRun:
    """Run one subtask with the model choosing tools; return its findings and its summary."""
    tools = _tool_defs(box.names())
    messages: list[BaseMessage] = [
        SystemMessage(EXECUTOR_SYSTEM.format(max_calls=box.context.max_tool_calls)),
        HumanMessage(_brief(task, subtask, box)),
    ]
    run = ToolRun(findings=[], summary="", turns=0)
    findings = run.findings
    for _ in range(box.context.max_tool_calls + 2):
        reply = _invoke(chat, messages, tools)
        run.turns += 1
        if not reply.tool_calls and not reply.invalid_tool_calls:
            written = text_calls(reply.content, set(box.names()) | {"record_finding"})
            if written:
                reply = AIMessage(content="", tool_calls=written)
        messages.append(reply)
        if not reply.tool_calls and not reply.invalid_tool_calls:
            if not box.inspected:  # prose, a bare fence or broken JSON: no step was taken
                run.empty = True
                break
            run.summary = reply.content if isinstance(reply.content, str) else str(reply.content)
            break
        run.called = True
        for n, call in enumerate(reply.tool_calls):
            args = call.get("args")
            name = str(call.get("name") or "")
            if not isinstance(args, dict):
                output = box.refuse(name, "the arguments were not a JSON object")
            elif name == "record_finding":
                output = box.record(dict(args), lambda a: record(a, subtask, box, findings))
            else:
                output = box.run(name, dict(args))
            messages.append(ToolMessage(output, tool_call_id=call.get("id") or f"call-{n}"))
        # A call whose arguments were not JSON still needs its answer, or the next request is
        # refused: it is answered as a refusal, and spends the budget like any other call.
        for n, bad in enumerate(reply.invalid_tool_calls):
            output = box.refuse(
                str(bad.get("name") or "?"),
                "the arguments were not valid JSON; send them again as one JSON object",
            )
            call_id = bad.get("id") or f"invalid-{n}"
            messages.append(ToolMessage(output, tool_call_id=call_id))
    run.summary = run.summary.strip() or f"{len(findings)} finding(s) recorded."
    return run


def text_calls(content: object, names: set[str]) -> list[dict[str, Any]]:
    """The tool calls a reply wrote as text (bare JSON or a ```json fence), as LangChain's
    `tool_calls` ({name, args, id}); [] when the text is not a call of a known tool."""
    if not isinstance(content, str) or "{" not in content:
        return []
    fenced = _FENCE.search(content)
    text = (fenced.group(1) if fenced else content).strip()
    try:
        data = json.loads(text[text.find("{") if "{" in text else 0 :])
    except ValueError:
        try:  # a call followed by prose: decode the first JSON value only
            data, _ = json.JSONDecoder().raw_decode(text[text.find("{") :])
        except ValueError:
            return []
    items = data if isinstance(data, list) else [data]
    calls: list[dict[str, Any]] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        function = item.get("function")
        inner: dict[str, Any] = function if isinstance(function, dict) else item
        name = str(inner.get("name") or inner.get("tool") or "")
        args = inner.get("arguments", inner.get("args", inner.get("parameters", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                continue
        if name in names and isinstance(args, dict):
            calls.append({"name": name, "args": args, "id": f"text-{n}", "type": "tool_call"})
    return calls


def _invoke(chat: Any, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
    """One turn through the LLM client's tool-calling seam (its retries, its error wording)."""
    reply = chat.invoke_tools(messages, tools)
    if not isinstance(reply, AIMessage):
        raise LLMError("The model did not answer with a chat message.")
    return reply


def record(args: dict[str, Any], subtask: Subtask, box: ToolBox, into: list[Finding]) -> str:
    """Check a finding the model records against the workspace and add it `into`; return what
    the model is told (ToolRefused when it cannot stand)."""
    if len(into) >= _MAX_FINDINGS:
        raise ToolRefused(f"This subtask already holds {_MAX_FINDINGS} findings.")
    try:
        parsed = RecordFinding.model_validate(args)
    except ValueError as exc:
        raise ToolRefused(f"The finding is incomplete: {exc}") from None
    if box.context.workspace is None:
        raise ToolRefused("There is no workspace to record a finding in.")
    text = box.context.workspace.read_file(parsed.file, parsed.line, parsed.line)
    topic = topic_named(subtask.topic)
    if topic is not None and not _concerns(topic, parsed.file):
        raise ToolRefused(
            f"{parsed.file} holds no code that {topic.name} is about; record a line of the"
            " program where it happens."
        )
    code = _NUMBERED.sub("", text.splitlines()[0] if text else "").strip()
    refs: list[KnowledgeRef] = [
        box.knowledge[n - 1] for n in parsed.knowledge if 1 <= n <= len(box.knowledge)
    ] or list(subtask.knowledge[:1])
    severity = parsed.severity.lower().strip()
    into.append(
        Finding(
            title=parsed.title.strip() or subtask.title,
            severity=severity if severity in _SEVERITIES else "medium",
            file=parsed.file,
            line=parsed.line,
            code=code,
            knowledge=tuple(refs),
            subtask=subtask.title,
            confirmed=True,
            note=parsed.explanation.strip(),
            cwe=_cwe_of(subtask),
            rule="model",
        )
    )
    return f"Recorded: {parsed.file}:{parsed.line}: {code}"


def _concerns(topic: Topic, path: str) -> bool:
    """Whether a weakness of `topic` can stand in the file `path`: program text, or a file one
    of the topic's rules reads."""
    name = PurePosixPath(path.replace("\\", "/")).name.lower()
    if PurePosixPath(name).suffix in _SOURCE_SUFFIXES:
        return True
    return any(fnmatch.fnmatch(name, rule.glob.rsplit("/", 1)[-1]) for rule in topic.rules)


def _cwe_of(subtask: Subtask) -> int:
    topic = topic_named(subtask.topic)
    return topic.cwes[0] if topic is not None and topic.cwes else 0
