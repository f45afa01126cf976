"""What a model's reply says, read whichever way it came, and the words for what was wrong with it.

The reply's text from its content or a tool call, from a reply cut at its token limit, or from
a stream read chunk by chunk (with the JSON object it has written so far); the structured
output validated against its schema, or salvaged (`core.llm.boundary`); a problem said in words
the model can act on, and the one repair request that quotes it back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import openai
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel, ValidationError

from .boundary import salvage

__all__ = [
    "Reading",
    "cut_text",
    "describe",
    "read_output",
    "read_stream",
    "repair_request",
    "reply_text",
]

log = logging.getLogger(__name__)

# How much of a rejected reply is quoted back to the model in the repair request.
_QUOTE_CHARS = 2000


@dataclass(frozen=True)
class Reading:
    """A reply read against its schema: the output (None: nothing usable), what was wrong with
    the reply as it came ("" when it validated whole), its text, and what salvage dropped."""

    output: BaseModel | None
    problem: str
    reply: str
    dropped: list[str] = field(default_factory=list)


def read_output(schema: type[BaseModel], out: Mapping[str, Any]) -> Reading:
    """What the structured runnable returned (`raw`, `parsed`, `parsing_error`), validated, or
    salvaged where the parser or the schema refused it: what validates is kept."""
    raw = out.get("raw")
    reply = reply_text(raw) if isinstance(raw, AIMessage) else ""
    parsed = out.get("parsed")
    if out.get("parsing_error") is not None:
        problem = describe(out["parsing_error"])
    elif parsed is None:
        problem = "the reply contained no structured output"
    else:
        try:
            return Reading(schema.model_validate(parsed), "", reply)
        except ValidationError as exc:
            problem = describe(exc)
    source = parsed if isinstance(parsed, dict) and out.get("parsing_error") is None else reply
    result, dropped = salvage(schema, source)
    return Reading(result, problem, reply, dropped)


def reply_text(message: AIMessage) -> str:
    """What the model answered, as text, whichever channel it used (content or a tool call)."""
    if isinstance(message.content, str) and message.content.strip():
        return message.content
    for call in message.invalid_tool_calls:
        if call.get("args"):
            return str(call["args"])
    for made in message.tool_calls:
        return json.dumps(made.get("args", {}), ensure_ascii=False)
    return ""


def cut_text(exc: openai.LengthFinishReasonError) -> str:
    """What a reply stopped at its token limit had written (content or a tool call's args)."""
    try:
        message = exc.completion.choices[0].message
    except (AttributeError, IndexError):
        return ""
    if message.content:
        return str(message.content)
    for call in message.tool_calls or []:
        return str(getattr(getattr(call, "function", None), "arguments", "") or "")
    return ""


def read_stream(
    runnable: Runnable[Any, Any],
    messages: list[BaseMessage],
    on_partial: Callable[[dict[str, Any]], None],
    *,
    deadline: float,
    role: str,
    model: str,
) -> dict[str, Any]:
    """One streamed request, read into what the structured runnable returns: the reply as
    `raw`, and `parsed` or the `parsing_error` for the same checks as an unstreamed one.

    `on_partial` gets the object written so far each time it grows. A reply still streaming
    at `deadline` (time.monotonic) is cut there and read like any cut reply (a server may
    ignore max_tokens); `role` and `model` name it in the log.
    """
    pieces: list[str] = []
    shown: dict[str, Any] | None = None
    stream = runnable.stream(messages)
    for chunk in stream:
        if time.monotonic() > deadline:
            log.info("%s reply from %s passed its deadline; read as cut", role, model)
            close = getattr(stream, "close", None)
            if close is not None:
                close()
            break
        piece = _chunk_text(chunk)
        if not piece:
            continue
        pieces.append(piece)
        partial = _partial_object("".join(pieces))
        if partial is not None and partial != shown:
            shown = partial
            on_partial(partial)
    text = "".join(pieces)
    raw = AIMessage(content=text)
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        return {"raw": raw, "parsed": None, "parsing_error": exc}
    return {"raw": raw, "parsed": parsed, "parsing_error": None}


def _chunk_text(chunk: Any) -> str:
    """The text a streamed chunk adds: its content, or its tool call's arguments."""
    calls = getattr(chunk, "tool_call_chunks", None) or []
    if calls:
        return "".join(str(call.get("args") or "") for call in calls)
    content = getattr(chunk, "content", "")
    return content if isinstance(content, str) else ""


def _partial_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply has written so far, closed where it stops; None before it
    starts (a reply may open with prose or a code fence) or while it cannot be read."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        found = parse_partial_json(text[start:])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def describe(exc: BaseException) -> str:
    """Say briefly what was wrong with a reply, in words the model can act on."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ValidationError):
            problems = [
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                for err in seen.errors()[:8]
            ]
            return "it did not match the schema (" + "; ".join(problems) + ")"
        if isinstance(seen, json.JSONDecodeError):
            return f"it was not valid JSON ({seen.msg} at position {seen.pos})"
        if isinstance(seen, openai.LengthFinishReasonError):
            return "it was cut off at the output token limit; answer more concisely"
        seen = seen.__cause__ or seen.__context__
    text = " ".join(str(exc).split())
    if "Invalid json output" in text or "Failed to parse" in text:
        return "it was not valid JSON"
    return text[:300] or type(exc).__name__


def repair_request(problem: str, reply: str) -> str:
    """The one request that asks the model again, quoting its reply and what was wrong."""
    quoted = reply[:_QUOTE_CHARS] + ("…" if len(reply) > _QUOTE_CHARS else "")
    shown = f"\n<previous_reply>\n{quoted}\n</previous_reply>" if quoted else ""
    return (
        f"Your previous reply could not be used: {problem}.{shown}\n"
        "Answer the same task again, with only the structured output, matching the schema"
        " exactly (all required fields, correct types)."
    )
