"""A hostile model: replies drawn from each role's JSON schema, then made careless the way real
models are (issue 13). Served through tests/fake_openai.py, so `ChatOpenAI` parses them for real.

`replies(schema)` is a hypothesis strategy of what one reply can be: a JSON value generated from
the schema (hypothesis-jsonschema) and then mangled — keys respelled, strings emptied, padded to
3,000 characters or filled with markup, numbers zeroed or negated, items repeated, objects given
as bare strings — and served as JSON, as JSON inside prose or a code fence, cut off mid-way, or
as prose alone. Strings may be placeholders the responder fills from the request: `<<Wn>>` is
the n-th word of the document in the prompt, `<<En>>` the name of the reply's own n-th entity,
so that names can be real, self-referencing or absent from the chunk as a model's are.

`HostileModel` is a FakeOpenAI responder: for the role a request is for it serves the reply the
test drew, and for the others a plain valid one, so one role at a time is under attack. A
tool-calling request (the task executor) gets `tool_calls(...)` replies: unknown tools, wrong
or unreadable arguments, a call past the budget.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel

from tests.fake_openai import _prompt_text, _schema_of, default_responder

__all__ = ["NASTY", "HostileModel", "fill", "replies", "tool_turns"]

NASTY = [
    "",
    "   ",
    "\n\t",
    "x" * 3000,
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(document.domain)>href",
    '"; DROP TABLE entities; --',
    "\u202etxt.exe",  # right-to-left override
    "名称\u200b",  # zero-width space
    "null",
    "[1]",
    "{{question}}",
]
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]{2,}|[\u4e00-\u9fff]{2,4}")
_NUMBERED = re.compile(r"^\d+\| ?(.*)$", re.M)
_PLACEHOLDER = re.compile(r"<<([WE])(\d+)>>")


def _strings() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40),
        st.sampled_from(NASTY),
        st.integers(0, 30).map(lambda n: f"<<W{n}>>"),
        st.integers(0, 4).map(lambda n: f"<<E{n}>>"),
    )


def _respell(key: str, how: int) -> str:
    if how == 1:
        head, *rest = key.split("_")
        return head + "".join(p.title() for p in rest)  # camelCase
    if how == 2:
        return key.replace("_", " ").title()  # "Line Start"
    if how == 3:
        return key.upper()
    return key


@st.composite
def _mangled(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """The value, made careless in the ways real replies are."""
    if isinstance(value, dict):
        how = draw(st.integers(0, 6))
        out = {}
        for key, inner in value.items():
            if draw(st.integers(0, 9)) == 9:
                continue  # a field left out (hypothesis favours 0: keep 0 the plain case)
            out[_respell(key, how if how <= 3 else 0)] = draw(_mangled(inner, depth + 1))
        return out
    if isinstance(value, list):
        items = [draw(_mangled(v, depth + 1)) for v in value]
        if items and draw(st.booleans()):
            items += items[: draw(st.integers(1, len(items)))]  # repeated items
        if draw(st.integers(0, 7)) == 7:
            return ", ".join(json.dumps(i, ensure_ascii=False) for i in items)  # a string
        return items
    if isinstance(value, str):
        return draw(st.one_of(st.just(value), _strings()))
    if isinstance(value, bool):
        return draw(st.sampled_from([value, "yes", "no", "true", 1, None]))
    if isinstance(value, int):
        return draw(st.sampled_from([value, 0, -3, 10**9, str(value), f"{value}-{value + 2}"]))
    return value


@st.composite
def _served(draw: st.DrawFn, value: Any) -> Any:
    """How the reply goes out: JSON, or text around, inside or instead of it."""
    text = json.dumps(value, ensure_ascii=False)
    form = draw(st.integers(0, 9))
    if form <= 4:
        return value
    if form == 5:
        return f"Sure! Here is the result:\n```json\n{text}\n```\nLet me know if you need more."
    if form == 6:
        return f"根据文档内容，结果如下：{text}"
    if form == 7:
        return text[: draw(st.integers(0, max(len(text) - 1, 0)))]  # cut off mid-way
    if form == 8:
        return draw(st.sampled_from(["I cannot help with that.", "", "```json\n```", "{}"]))
    return [value] if isinstance(value, dict) else value  # wrapped in a list


def _focused(node: Any, top: bool = True) -> Any:
    """The schema with its known fields only (no random extra keys) and the top-level lists
    non-empty, so that the examples spend their budget on the fields the code reads."""
    if isinstance(node, dict):
        out = {k: _focused(v, False) for k, v in node.items()}
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
            if top:
                out["required"] = list(out["properties"])
                for prop in out["properties"].values():
                    if prop.get("type") == "array":
                        prop["minItems"] = 1
        if "$defs" in out:
            out["$defs"] = {k: _focused(v, False) for k, v in node["$defs"].items()}
        return out
    if isinstance(node, list):
        return [_focused(v, False) for v in node]
    return node


def replies(schema: type[BaseModel]) -> st.SearchStrategy[Any]:
    """What a careless model may answer for a role whose output schema is `schema`."""
    valid = from_schema(_focused(schema.model_json_schema()), allow_x00=True)
    return valid.flatmap(lambda v: _mangled(v)).flatmap(lambda v: _served(v))


def fill(reply: Any, body: dict[str, Any]) -> Any:
    """Replace placeholders: `<<Wn>>` by words of the prompt's document, `<<En>>` by the names
    of the reply's own entities (after their own placeholders are filled)."""
    lines = _NUMBERED.findall(_prompt_text(body)) or [_prompt_text(body)]
    words = _WORD.findall("\n".join(lines)) or ["word"]

    def words_in(value: Any) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(
                lambda m: words[int(m.group(2)) % len(words)] if m.group(1) == "W" else m.group(0),
                value,
            )
        if isinstance(value, list):
            return [words_in(v) for v in value]
        if isinstance(value, dict):
            return {k: words_in(v) for k, v in value.items()}
        return value

    reply = words_in(reply)
    names: list[str] = []
    if isinstance(reply, dict):
        for key, value in reply.items():
            if key.lower().startswith("entit") and isinstance(value, list):
                names = [str(e.get("name", "")) for e in value if isinstance(e, dict)]

    def entities_in(value: Any) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(
                lambda m: names[int(m.group(2)) % len(names)] if names else "missing", value
            )
        if isinstance(value, list):
            return [entities_in(v) for v in value]
        if isinstance(value, dict):
            return {k: entities_in(v) for k, v in value.items()}
        return value

    return entities_in(reply)


@st.composite
def tool_turns(draw: st.DrawFn) -> list[Any]:
    """The executor's turns: tool calls good and bad, then (maybe) a final text."""
    call = st.one_of(
        st.fixed_dictionaries(
            {
                "name": st.sampled_from(
                    ["grep", "read_file", "list_files", "search_knowledge", "record_finding"]
                    + ["delete_everything", "", "shell"]
                ),
                "arguments": st.one_of(
                    st.dictionaries(
                        st.sampled_from(
                            ["pattern", "path", "glob", "query", "start", "end", "file", "line"]
                            + ["title", "severity", "knowledge", "explanation", "x"]
                        ),
                        st.one_of(
                            _strings(),
                            st.integers(-5, 10**6),
                            st.lists(st.integers(-2, 50), max_size=3),
                            st.sampled_from(["(a+)+$", "[", "../../etc/passwd", "/etc/passwd"]),
                        ),
                        max_size=5,
                    ),
                    st.sampled_from(['{"pattern": "exec', "not json", "[]", "null", "{}"]),
                ),
            }
        )
    )
    turns: list[Any] = draw(st.lists(st.lists(call, min_size=1, max_size=3), max_size=6))
    if draw(st.booleans()):
        turns.append({"_content": draw(st.sampled_from(["Done.", "", "<b>x</b>" * 100]))})
    return turns


class HostileModel:
    """A FakeOpenAI responder: `attack` maps schema names (or "tools") to what to serve."""

    def __init__(self, fallback: Callable[[dict[str, Any]], Any] = default_responder) -> None:
        self.fallback = fallback
        self.attack: dict[str, Any] = {}
        self.turns: list[Any] = []  # the executor's scripted turns, consumed in order
        self.seen: list[str] = []  # the role of every request, in order

    def __call__(self, body: dict[str, Any]) -> Any:
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        name, _ = _schema_of(body)
        role = "tools" if "record_finding" in tools else name
        self.seen.append(role)
        if role == "tools":
            if not self.turns:
                return {"_content": "No more steps."}
            turn = self.turns.pop(0)
            return turn if isinstance(turn, dict) else {"_tool_calls": turn}
        if role in self.attack:
            return fill(self.attack[role], body)
        return self.fallback(body)


def pool(schema: type[BaseModel], n: int = 40) -> list[Any]:
    """`n` replies of `replies(schema)`, the same on every run (for a server outside a test)."""
    from hypothesis import HealthCheck, Phase, given, settings

    out: list[Any] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(replies(schema))
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    return out


class ChaosModel:
    """A whole careless model for a CLI run: every role answers hostile replies in turn with
    valid ones, a judge never says enough, and a chunk marked POISON never gets a usable reply.
    `faults()` is a FakeOpenAI `chaos` hook: now and then a 500, a 429, a cut or a timeout."""

    POISON = "POISON"

    def __init__(self, schemas: list[type[BaseModel]], *, every: int = 2, size: int = 8) -> None:
        self.schemas = {schema.__name__: schema for schema in schemas}
        self.pools: dict[str, list[Any]] = {}  # drawn when a role is first asked: a run asks
        self.size = size  # each role a few times, and drawing a pool takes 0.2-0.6 s
        self._drawing = threading.Lock()  # the fake serves requests in threads
        self.every = every
        self.count: dict[str, int] = {}
        self.requests = 0
        self.model = HostileModel()

    def __call__(self, body: dict[str, Any]) -> Any:
        name, _ = _schema_of(body)
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        if "record_finding" in tools:
            n = self.count["tools"] = self.count.get("tools", 0) + 1
            turns = [
                [{"name": "grep", "arguments": {"pattern": "executeQuery|createQuery"}}],
                [{"name": "shell", "arguments": {"cmd": "id"}}],
                [{"name": "read_file", "arguments": '{"path": "pom.xml"'}],
                [{"name": "record_finding", "arguments": {"file": "pom.xml", "line": 10**6}}],
                {"_content": "Done."},
            ]
            return {"_tool_calls": turns[n % 5]} if n % 5 != 4 else turns[4]
        if name == "EvidenceVerdict":
            return {"sufficient": False, "missing": ["everything else"], "covered": []}
        if name == "RefinedQueries":  # one fresh query among unusable ones, so rounds go on
            n = self.count[name] = self.count.get(name, 0) + 1
            return {"queries": ["", "x" * 3000, {"Query": f"session timeout rule {n}"}]}
        if name == "ChunkKnowledge" and self.POISON in _prompt_text(body):
            return "I am sorry, but I cannot process this document."
        n = self.count[name] = self.count.get(name, 0) + 1
        with self._drawing:
            if name in self.schemas and name not in self.pools:
                self.pools[name] = pool(self.schemas[name], self.size)
        replies_ = self.pools.get(name)
        if not replies_ or n % self.every == 0:
            return default_responder(body)
        return fill(replies_[n % len(replies_)], body)

    def faults(self, body: dict[str, Any]) -> str | None:
        self.requests += 1
        return {7: "500", 11: "429", 13: "cut", 17: "timeout"}.get(self.requests % 19)
