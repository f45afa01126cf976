"""The probes that find out what an OpenAI-compatible endpoint can do, asked rather than assumed.

An endpoint is probed once per process and model (and again by `test connection`): a tiny
request for each structured-output method, a tiny tool-calling turn, a tiny streamed reply, and
the server's own word on how many requests it serves at once (llama-server's `/props`
`total_slots`); what each answer means is `core.llm.capabilities`. Only a probe that reached
the endpoint is kept for the rest of the process; a client keeps an unreachable one for
`UNKNOWN_HOLD_S`, so a batch does not probe again for every item.

The probe speaks plain HTTP (httpx, which the OpenAI SDK uses underneath), so that what was
refused is read from the status code and what came back from the raw message: a model that
writes a tool call as text in `content` is told apart from one that calls the tool.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from ..errors import LLMError
from .capabilities import (
    AS_TEXT,
    FIELDS,
    REFUSED,
    UNREACHABLE,
    UNUSABLE,
    Capabilities,
    choose_method,
    describe,
)
from .retry import public_url, redact

__all__ = ["PROBE_HEADER", "Prober", "list_models", "probe", "server_slots"]

log = logging.getLogger(__name__)

# Sent with every probe request; a server ignores it, and the test fake keeps probes apart from
# the calls it counts by it.
PROBE_HEADER = "X-Zhixing-Probe"
# Each probe is a few tokens: the slowest, the tool turn (158 prompt + 17 reply tokens), took
# 6.9 s on the real one-slot llama-server with the machine loaded (35 / 7 tokens/s, a third of
# its idle speed; issue 34); 20 s leaves room for a slot busy with one short request. Refused
# or unknown hosts fail at connect, within seconds.
PROBE_TIMEOUT_S = 20.0
_CONNECT_TIMEOUT_S = 5.0
_PROPS_TIMEOUT_S = 3.0
# How long a client trusts "could not be reached" before probing again: a batch of hundreds of
# items against a server that times out pays one probe timeout per 30 s, not one per item.
UNKNOWN_HOLD_S = 30.0
# Token limits of the probe replies. Measured on the real one-slot llama-server (issue 34):
# the json_schema reply took 13 tokens (whitespace under the grammar), json_object 6, the tool
# turn 17 (written as text); 32 and 64 leave room for a wordier model. One token shows a stream.
_STRUCTURED_TOKENS = 32
_TOOL_TOKENS = 64
_STREAM_TOKENS = 4
# HTTP statuses that say "not this request" (an unsupported field, route or model): a refusal.
# Any other failure (auth, rate limit, a gateway down) says nothing about the feature.
_REFUSED = frozenset({400, 404, 405, 415, 422, 501})

_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
# The json_schema question does not ask for JSON: only a server that enforces the schema gets
# {"ok": ...} from a model asked in plain words.
_ASK_PLAIN = "Is the sky blue? Answer in a few words."
_ASK_JSON = 'Is the sky blue? Reply with a JSON object such as {"ok": true}.'
_ASK_TOOL = "What is the weather in Paris? Call the get_weather tool."
_ASK_STREAM = "Say OK."


def server_slots(base_url: str) -> int | None:
    """How many requests the server says it serves at once (llama-server's /props
    `total_slots`), or None where it says nothing (vLLM, Ollama, OpenAI)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        reply = httpx.get(f"{root}/props", timeout=_PROPS_TIMEOUT_S)
        slots = reply.json().get("total_slots") if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return slots if isinstance(slots, int) and slots > 0 else None


def list_models(base_url: str, api_key: str = "", *, timeout_s: float = 3.0) -> list[str] | None:
    """Ask the endpoint which models it serves (GET /models, the cheapest call it has): their
    ids, or None when it answers but has no such route. Raises LLMError with one sentence
    when it cannot be reached, refuses the key or fails."""
    url = public_url(base_url.rstrip("/"))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        reply = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        message = f"The LLM endpoint at {url} did not answer within {timeout_s:g} s."
        raise LLMError(message) from None
    except httpx.HTTPError as exc:
        reason = redact(" ".join(str(exc).split()) or type(exc).__name__, api_key)
        message = (
            f"The LLM endpoint at {url} cannot be reached ({reason}); check OPENAI_BASE_URL and"
            " that the server is running."
        )
        raise LLMError(message) from None
    if reply.status_code in (404, 405):
        return None  # reached: a server without the route (a bare proxy) still serves chats
    if reply.status_code in (401, 403):
        raise LLMError(
            f"The LLM endpoint at {url} refused the API key (HTTP {reply.status_code}); check"
            " OPENAI_API_KEY."
        )
    if reply.status_code != 200:
        raise LLMError(f"The LLM endpoint at {url} answered HTTP {reply.status_code} on /models.")
    try:
        data = reply.json().get("data")
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        raise LLMError(
            f"The LLM endpoint at {url} answered /models with something other than a model"
            " list; check that OPENAI_BASE_URL ends in /v1 (or the API's own root)."
        ) from None


class _Unreachable(Exception):
    """The endpoint did not answer (connection, timeout, auth, rate limit, gateway)."""


def probe(
    base_url: str, model: str, api_key: str = "", *, timeout_s: float = PROBE_TIMEOUT_S
) -> Capabilities:
    """Ask the endpoint what it can do: four tiny chat requests and /props, one at a time.

    A request the server refuses (HTTP 400, 404, 422 …) makes that capability False; once the
    endpoint cannot be reached, the rest stay None (unknown) and are not tried.
    """
    from .retry import DEFAULT_BASE_URL, redact

    started = time.perf_counter()
    base_url = base_url.rstrip("/")
    headers = {PROBE_HEADER: "1", "Authorization": f"Bearer {api_key or 'not-needed'}"}
    # OpenAI's own API takes max_completion_tokens; the servers teams host read max_tokens.
    limit = "max_completion_tokens" if base_url == DEFAULT_BASE_URL else "max_tokens"
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, _CONNECT_TIMEOUT_S))
    found: dict[str, bool | None] = dict.fromkeys(FIELDS)
    spent = [0.0, 0, 0]
    why: dict[str, str] = {}
    detail: dict[str, str] = {}
    checks: list[tuple[str, dict[str, Any], Callable[[Any], tuple[bool, str]]]] = [
        ("json_schema", _schema_request(), _schema_reply),
        ("json_object", _object_request(), _object_reply),
        ("tool_calls", _tool_request(), _tool_reply),
        ("streaming", _stream_request(), _stream_reply),
    ]
    with httpx.Client(timeout=timeout, headers=headers) as http:
        for name, body, read in checks:
            # No temperature: some models (OpenAI's reasoning ones) refuse any but the default.
            body = {"model": model, limit: body.pop("_tokens"), **body}
            try:
                found[name], code = _ask(http, f"{base_url}/chat/completions", body, read, spent)
            except _Unreachable as exc:
                detail[name] = redact(str(exc), api_key)
                why |= {n: UNREACHABLE for n in FIELDS if found[n] is None}
                break
            except httpx.HTTPStatusError as exc:
                found[name], code = False, REFUSED
                detail[name] = f"HTTP {exc.response.status_code}"
            if code:
                why[name] = code
    slots = server_slots(base_url) if found["json_schema"] is not None else None
    return Capabilities(
        **found,
        slots=slots,
        why=tuple(why.items()),
        took_s=round(time.perf_counter() - started, 2),
        detail=tuple(detail.items()),
        spent=(round(spent[0], 3), int(spent[1]), int(spent[2])) if spent[1] else None,
    )


def _ask(
    http: httpx.Client,
    url: str,
    body: dict[str, Any],
    read: Callable[[Any], tuple[bool, str]],
    spent: list[Any],
) -> tuple[bool, str]:
    """Send one probe; (worked, why not) from its reply. Raise HTTPStatusError for a refusal,
    _Unreachable for anything that says nothing about the feature. An unstreamed reply that
    says its usage adds its seconds and tokens to `spent`."""
    try:
        if body.get("stream"):
            with http.stream("POST", url, json=body) as reply:
                _status(reply)
                return read(reply.iter_lines())
        started = time.perf_counter()
        reply = http.post(url, json=body)
        _status(reply)
        data = reply.json()
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict) and usage.get("prompt_tokens"):
            spent[0] += time.perf_counter() - started
            spent[1] += int(usage.get("prompt_tokens") or 0)
            spent[2] += int(usage.get("completion_tokens") or 0)
        return read(data)
    except httpx.HTTPStatusError:
        raise
    except httpx.TransportError as exc:
        raise _Unreachable(f"{type(exc).__name__}: {exc}") from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return False, UNUSABLE  # a 200 whose body is not a chat completion


def _status(reply: httpx.Response) -> None:
    if reply.status_code in _REFUSED:
        reply.read()
        raise httpx.HTTPStatusError("refused", request=reply.request, response=reply)
    if reply.status_code != 200:
        raise _Unreachable(f"HTTP {reply.status_code}")


def _messages(text: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": text},
    ]


def _schema_request() -> dict[str, Any]:
    format_ = {"name": "probe", "schema": _PROBE_SCHEMA, "strict": False}
    return {
        "messages": _messages(_ASK_PLAIN),
        "response_format": {"type": "json_schema", "json_schema": format_},
        "_tokens": _STRUCTURED_TOKENS,
    }


def _object_request() -> dict[str, Any]:
    return {
        "messages": _messages(_ASK_JSON),
        "response_format": {"type": "json_object"},
        "_tokens": _STRUCTURED_TOKENS,
    }


def _tool_request() -> dict[str, Any]:
    return {"messages": _messages(_ASK_TOOL), "tools": [_TOOL], "_tokens": _TOOL_TOKENS}


def _stream_request() -> dict[str, Any]:
    return {"messages": _messages(_ASK_STREAM), "stream": True, "_tokens": _STREAM_TOKENS}


def _content(reply: Any) -> str:
    return reply["choices"][0]["message"].get("content") or ""


def _schema_reply(reply: Any) -> tuple[bool, str]:
    try:
        parsed = json.loads(_content(reply))
    except ValueError:
        return False, UNUSABLE
    ok = isinstance(parsed, dict) and isinstance(parsed.get("ok"), bool)
    return ok, "" if ok else UNUSABLE


def _object_reply(reply: Any) -> tuple[bool, str]:
    try:
        ok = isinstance(json.loads(_content(reply)), dict)
    except ValueError:
        ok = False
    return ok, "" if ok else UNUSABLE


def _tool_reply(reply: Any) -> tuple[bool, str]:
    message = reply["choices"][0]["message"]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            continue
        if function.get("name") == "get_weather" and isinstance(args, dict):
            return True, ""
    # llama-server with a small model: the grammar was built, the call came back as text.
    text = message.get("content") or ""
    return False, AS_TEXT if "get_weather" in text or '"city"' in text else UNUSABLE


def _stream_reply(lines: Iterator[str]) -> tuple[bool, str]:
    # The first chunk settles it: the rest is not waited for (a server may ignore max_tokens).
    for line in lines:
        data = line.removeprefix("data:").strip()
        if line.startswith("data:") and data != "[DONE]" and json.loads(data).get("choices"):
            return True, ""
    return False, UNUSABLE


_known: dict[tuple[str, str], Capabilities] = {}  # probes that reached their endpoint
_locks: dict[tuple[str, str], threading.Lock] = {}
_guard = threading.Lock()


class Prober:
    """What one client knows of its endpoint, per model, probed lazily and at most once.

    What a probe that reached the endpoint found is kept for the whole process (every client of
    the same base URL and model shares it); a probe that could not reach it is kept by this
    client only, for UNKNOWN_HOLD_S, and never stands in for a later answer.
    """

    def __init__(self, base_url: str, api_key: str = "", *, timeout_s: float = PROBE_TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = min(timeout_s, PROBE_TIMEOUT_S)
        self._unknown: dict[str, tuple[Capabilities, float]] = {}

    def peek(self, model: str) -> Capabilities | None:
        """What is known already, without sending anything."""
        known = _known.get((self.base_url, model))
        if known is not None:
            return known
        held = self._unknown.get(model)
        return held[0] if held is not None else None

    def get(self, model: str, *, fresh: bool = False) -> Capabilities:
        """The capabilities for `model`, probing first if nothing (fresh: nothing current) is
        known; one thread probes while the others wait for its answer."""
        key = (self.base_url, model)
        with _guard:
            lock = _locks.setdefault(key, threading.Lock())
        with lock:
            if not fresh:
                if (known := _known.get(key)) is not None:
                    return known
                held = self._unknown.get(model)
                if held is not None and time.monotonic() - held[1] < UNKNOWN_HOLD_S:
                    return held[0]
            caps = probe(self.base_url, model, self.api_key, timeout_s=self.timeout_s)
            log.info(
                "%s (%s): %s; auto uses %s (probed in %.1f s)",
                _shown(self.base_url),
                model,
                describe(caps),
                choose_method(caps),
                caps.took_s,
            )
            if caps.known:
                _known[key] = caps
                self._unknown.pop(model, None)
            else:  # kept apart: what an earlier probe found still stands for the other calls
                self._unknown[model] = (caps, time.monotonic())
            return caps


def _shown(url: str) -> str:
    from .retry import public_url

    return public_url(url)
