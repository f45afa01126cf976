"""Structured output as the endpoint is asked for it: the call prepared (the prompt, the JSON
schema sent, the cache key), the token limit, and the langchain runnables that send them.

This module and `core.llm.embeddings` are the only importers of langchain-openai (STYLE habit 2).
`ChatOpenAI.with_structured_output(..., include_raw=True)` does the request and the parsing; a
`Runnables` makes each runnable once per (model, schema, method) and shares it between threads.
What to do with a reply (validation, salvage, repair) stays with the client (`core.llm.client`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, cast

from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from ..config import Settings
from .cache import cache_key
from .prompts import IMAGE_URL_PREFIX, Prompt
from .retry import DEFAULT_BASE_URL

__all__ = [
    "GRAMMAR_LIST_ITEMS",
    "GRAMMAR_STRING_CHARS",
    "Prepared",
    "Runnables",
    "max_tokens",
    "prepare",
    "schema_json",
]

# Keyless local servers (vLLM, Ollama) ignore the key, but the OpenAI SDK refuses to start
# without one.
_PLACEHOLDER_KEY = "not-needed"
# A reply may run to this many times its role's estimated length (core.llm.prompts) before the
# server stops it: 3x the guesses (1,000 tokens for a graph chunk, 300 for an answer) leaves room
# for a verbose model while a runaway (6,905 tokens over 480 s in issue 34) ends at 3,000.
_MAX_TOKENS_FACTOR = 3
_MIN_MAX_TOKENS = 256
_TOOL_MAX_TOKENS = 1024  # one tool-calling turn: a call's arguments or a short summary
# Connecting is quick when the server is up (a refused or unknown host fails at once); the read
# timeout instead covers a request that waits in a busy server's queue.
_CONNECT_TIMEOUT_S = 10.0


def max_tokens(role: Prompt[Any]) -> int:
    """The token limit sent with every call of a role (the longest estimate, times a margin)."""
    guess = max(role.completion_tokens({"mode": "graph"}), role.completion_tokens({}))
    return max(_MIN_MAX_TOKENS, _MAX_TOKENS_FACTOR * guess)


# The most a string or a list may hold in the schema sent, where a field names no bound of its
# own (`json_schema_extra`): a grammar-building server then cannot let a model run on. A 0.5B
# model under llama.cpp's grammar wrote task turns, plans and rewrites until the token limit
# cut them (480-900 tokens, 40-90 s each on one CPU thread, issue 34), each then repaired.
# Well above what a field needs (the longest measured: a 180-character thought), and under
# llama.cpp's cap on a grammar's repetitions (about 2,000).
GRAMMAR_STRING_CHARS = 400
GRAMMAR_LIST_ITEMS = 12


def schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the server, with every property required and every string and
    list bounded (a copy of the one made per class, so a caller that changes it changes
    nothing else).

    A grammar-building server (llama.cpp) writes the required properties first: with `found`
    required and `answer` optional, the model committed to its verdict before it had written a
    word (issue 34). Required, they come in the schema's order. The bounds are only sent:
    validation stays with the pydantic class, whose defaults still fill what a lenient server
    leaves out and which takes a longer value from a server that keeps no grammar.
    """
    return copy.deepcopy(_bounded_schema(schema))


@cache
def _bounded_schema(schema: type[BaseModel]) -> dict[str, Any]:
    out = schema.model_json_schema()
    _bound(out)
    return out


def _bound(node: Any) -> None:
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "object" and isinstance(node.get("properties"), dict):
            node["required"] = list(node["properties"])
        elif kind == "string" and "enum" not in node:
            node.setdefault("maxLength", GRAMMAR_STRING_CHARS)
        elif kind == "array":
            node.setdefault("maxItems", GRAMMAR_LIST_ITEMS)
        for value in node.values():
            _bound(value)
    elif isinstance(node, list):
        for value in node:
            _bound(value)


@dataclass(frozen=True)
class Prepared:
    """A call ready to send: the rendered prompt, its cache key, and the completion tokens the
    estimate prices it at (the role's figure for these variables: a graph chunk's, not an index
    chunk's), so the rate measured on it is the rate the estimate is priced at."""

    role: Prompt[Any]
    model: str
    system: str
    user: str
    key: str
    completion: int
    image: str = ""  # a `data:` URL sent beside `user` (a role with an image, core.llm.prompts)

    def human(self) -> HumanMessage:
        """The user turn: the rendered text, and the image as an `image_url` part if any."""
        if not self.image:
            return HumanMessage(self.user)
        return HumanMessage(
            [
                {"type": "text", "text": self.user},
                {"type": "image_url", "image_url": {"url": self.image}},
            ]
        )


def prepare(
    role: Prompt[Any], variables: Mapping[str, object], model: str, method_for: Callable[[str], str]
) -> Prepared:
    """Render a call of `role` on `model`, asked for by the method `method_for(model)` names
    (looked up after rendering, so a template mistake raises before the endpoint is probed)."""
    user = role.render(variables)
    schema = schema_json(role.schema)
    if method_for(model) == "json_mode":
        # json_mode only promises *some* JSON object, so the prompt has to carry the shape.
        user += (
            "\n\nReply with one JSON object, without prose or code fences, that matches"
            f" this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
        )
    image = _image(role, variables)
    # The image enters the key by its digest: the same page read again is a cache hit.
    seen = f"\n\n{hashlib.sha256(image.encode()).hexdigest()}" if image else ""
    key = cache_key(model, f"{role.system}\n\n{user}{seen}", schema)
    return Prepared(
        role=role,
        model=model,
        system=role.system,
        user=user,
        key=key,
        completion=role.completion_tokens(variables),
        image=image,
    )


def _image(role: Prompt[Any], variables: Mapping[str, object]) -> str:
    """The role's image variable, checked to be what the chat API takes: a PNG `data:` URL."""
    if not role.image:
        return ""
    image = variables.get(role.image)
    if not isinstance(image, str) or not image.startswith(IMAGE_URL_PREFIX):
        raise ValueError(f"Prompt {role.name!r} needs {role.image!r}, a PNG data: URL.")
    return image


class Runnables:
    """The langchain runnables of one endpoint, made once each and shared between threads:
    (model, schema, method) for structured output, streamed or not; tool names for tool calling."""

    def __init__(self, settings: Settings, base_url: str, timeout_s: float) -> None:
        self.settings = settings
        self.base_url = base_url
        # (connect, read, write, pool), the form the OpenAI SDK's HTTP client takes.
        self._timeout = (min(timeout_s, _CONNECT_TIMEOUT_S), timeout_s, timeout_s, timeout_s)
        # (model, schema) for structured output; ("tools", tool names) for tool calling.
        self._made: dict[tuple[str, Any], Runnable[Any, Any]] = {}
        self._lock = threading.Lock()

    def _limit(self, tokens: int) -> dict[str, Any]:
        """The token limit as the endpoint reads it: OpenAI's own API takes
        `max_completion_tokens` (what langchain sends for `max_tokens`); llama-server, vLLM and
        Ollama read `max_tokens`, sent as it is in the body."""
        if self.base_url == DEFAULT_BASE_URL:
            return {"max_tokens": tokens}
        return {"extra_body": {"max_tokens": tokens}}

    def tools(self, key: tuple[str, ...], tools: Sequence[Mapping[str, Any]]) -> Runnable[Any, Any]:
        """The chat model with these tools bound (OpenAI function specs), `key` their names."""
        with self._lock:
            model = self._made.get(("tools", key))
            if model is None:
                model = ChatOpenAI(
                    model=self.settings.chat_model,
                    api_key=SecretStr(self.settings.openai_api_key or _PLACEHOLDER_KEY),
                    base_url=self.base_url,
                    timeout=self._timeout,
                    **self._limit(_TOOL_MAX_TOKENS),
                    max_retries=0,
                    use_responses_api=False,
                ).bind_tools([dict(t) for t in tools])
                self._made[("tools", key)] = model
            return model

    def streaming(self, model: str, role: Prompt[Any], method: str) -> Runnable[Any, Any]:
        """`model` asked for the role's schema by `method`, to be streamed.

        The response format goes in the request body as it is (`extra_body`): langchain-openai
        would stream a `response_format` argument through the SDK's parse helper, which sends
        the whole reply again at the end.
        """
        schema = role.schema
        limit = self._limit(max_tokens(role))
        with self._lock:
            runnable = self._made.get(("stream", (model, schema, method)))
            if runnable is not None:
                return runnable
            llm = ChatOpenAI(
                model=model,
                api_key=SecretStr(self.settings.openai_api_key or _PLACEHOLDER_KEY),
                base_url=self.base_url,
                timeout=self._timeout,
                max_retries=0,
                use_responses_api=False,
                **{k: v for k, v in limit.items() if k != "extra_body"},
            )
            extra = limit.get("extra_body", {})
            described = {
                "name": schema.__name__,
                "description": (schema.__doc__ or schema.__name__).strip(),
            }
            if method == "function_calling":
                tool = {
                    "type": "function",
                    "function": described | {"parameters": schema_json(schema)},
                }
                runnable = llm.bind_tools([tool], tool_choice=schema.__name__, extra_body=extra)
            elif method == "json_mode":
                runnable = llm.bind(extra_body=extra | {"response_format": {"type": "json_object"}})
            else:
                format_ = described | {"schema": schema_json(schema), "strict": False}
                runnable = llm.bind(
                    extra_body=extra
                    | {"response_format": {"type": "json_schema", "json_schema": format_}}
                )
            self._made[("stream", (model, schema, method))] = runnable
            return runnable

    def structured(self, model: str, role: Prompt[Any], method: str) -> Runnable[Any, Any]:
        """`model` asked for the role's schema by `method`; the runnable returns the reply as
        `raw` and `parsed` or the `parsing_error` (`include_raw`)."""
        with self._lock:
            runnable = self._made.get((model, (role.schema, method)))
            if runnable is None:
                runnable = self._build(model, role, method)
                self._made[(model, (role.schema, method))] = runnable
            return runnable

    def _build(self, model: str, role: Prompt[Any], method: str) -> Runnable[Any, Any]:
        schema = role.schema
        llm = ChatOpenAI(
            model=model,
            api_key=SecretStr(self.settings.openai_api_key or _PLACEHOLDER_KEY),
            base_url=self.base_url,
            timeout=self._timeout,
            **self._limit(max_tokens(role)),
            max_retries=0,  # ours count and word every retry (core.llm.retry)
            use_responses_api=False,  # OpenAI-compatible servers implement chat completions
        )
        target: type[BaseModel] | dict[str, Any] = schema
        if method == "json_schema":
            # Passed as a non-strict JSON schema, not as the pydantic class: langchain would send
            # a class as OpenAI "strict" mode, which rejects open objects such as the entities'
            # `attributes` map and fields with defaults. The client validates instead.
            target = {
                "name": schema.__name__,
                "description": (schema.__doc__ or schema.__name__).strip(),
                "schema": schema_json(schema),
                "strict": False,
            }
        kind = cast(Literal["function_calling", "json_mode", "json_schema"], method)
        return llm.with_structured_output(target, method=kind, include_raw=True)
