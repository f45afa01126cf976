"""What an OpenAI-compatible endpoint was found to do, and what Zhixing makes of it.

Each capability is True (it worked), False (it was refused or came back unusable) or None (not
tried, or the endpoint could not be reached, which says nothing about what it can do), with a
code saying why it is not True. `choose_method` picks the structured-output method `auto`
stands for; `describe` says it all in one line. The probing itself is `core.llm.probe`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "AS_TEXT",
    "FIELDS",
    "REFUSED",
    "UNREACHABLE",
    "UNUSABLE",
    "Capabilities",
    "choose_method",
    "describe",
]

# Why a capability is False or None, by code; `describe` and the settings page word them.
REFUSED, UNUSABLE, AS_TEXT, UNREACHABLE = "refused", "unusable", "as_text", "unreachable"
FIELDS = ("json_schema", "json_object", "tool_calls", "streaming")


@dataclass(frozen=True)
class Capabilities:
    json_schema: bool | None = None  # response_format json_schema honoured
    json_object: bool | None = None  # response_format json_object honoured
    tool_calls: bool | None = None  # a tool turn comes back as `tool_calls`, not as text
    streaming: bool | None = None  # `stream: true` yields chunks
    slots: int | None = None  # requests served at once, where the server says so
    # (capability, code) for each one that is not True: REFUSED, UNUSABLE, AS_TEXT, UNREACHABLE.
    why: tuple[tuple[str, str], ...] = ()
    took_s: float = 0.0  # how long the probe took
    # (seconds, prompt tokens, completion tokens) of the unstreamed probe replies that said
    # their usage: the endpoint's speed, measured before the first real call (the estimate).
    spent: tuple[float, int, int] | None = field(default=None, compare=False)
    detail: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # HTTP status etc.

    @property
    def known(self) -> bool:
        """Whether every capability was found out (the endpoint answered every probe)."""
        return all(getattr(self, name) is not None for name in FIELDS)

    def reason(self, name: str) -> str | None:
        """Why `name` is not True (a code), or None when it is."""
        return dict(self.why).get(name)


def choose_method(caps: Capabilities) -> str:
    """The structured-output method `auto` stands for on an endpoint with these capabilities.

    json_schema where it works; else json_object (langchain's `json_mode`, the schema then in
    the prompt); else function calling where tool calls come back; else json_schema anyway:
    a server that ignores it still returns text, which the salvage and repair path reads.
    """
    if caps.json_schema:
        return "json_schema"
    if caps.json_object:
        return "json_mode"
    if caps.tool_calls:
        return "function_calling"
    return "json_schema"


_WORDS = {
    REFUSED: "refused",
    UNUSABLE: "reply unusable",
    AS_TEXT: "written as text",
    UNREACHABLE: "no answer",
}


def describe(caps: Capabilities) -> str:
    """One line saying what was found, e.g. "structured output: json_schema ✓, json_object ✓,
    tool calls ✗ (written as text), streaming ✓; serves 1 request at a time"."""
    shown = {"json_schema": "json_schema", "json_object": "json_object"}
    shown |= {"tool_calls": "tool calls", "streaming": "streaming"}
    parts = []
    for name in FIELDS:
        value = getattr(caps, name)
        mark = "✓" if value else ("✗" if value is False else "?")
        code = caps.reason(name)
        parts.append(f"{shown[name]} {mark}" + (f" ({_WORDS[code]})" if code else ""))
    if caps.slots:
        many = "request" if caps.slots == 1 else "requests"
        served = f"serves {caps.slots} {many} at a time"
    else:
        served = "does not say how many requests it serves at once"
    return "structured output: " + ", ".join(parts) + f"; {served}"
