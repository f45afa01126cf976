"""The LLM client: one structured call per role, cached, retried, repaired once, run in a pool.

This module and `core.llm.embeddings` are the only importers of langchain-openai (STYLE habit 2).
`ChatOpenAI.with_structured_output(..., include_raw=True)` does the request and the parsing; this
module adds what a build needs around it: the SQLite cache, retries with backoff on transient
failures, one repair round-trip on invalid output, a bound on concurrent requests, and counters.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, cast

import openai
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.json import parse_partial_json
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, ValidationError

from ..config import Settings
from ..errors import LLMError, LLMOutputError
from .boundary import Rejections, salvage
from .cache import LLMCache, cache_key
from .capabilities import Capabilities, Prober, choose_method, server_slots
from .prompts import Prompt, T, estimate_tokens
from .protocol import CallsCancelled
from .retry import (
    DEFAULT_BASE_URL,
    Concurrency,
    EndpointUnreachableError,
    LLMStats,
    RetryPolicy,
    endpoint_error,
    is_transient,
    public_url,
    redact,
    run_with_retries,
)

__all__ = ["LLMClient", "make_client"]

log = logging.getLogger(__name__)

# Keyless local servers (vLLM, Ollama) ignore the key, but the OpenAI SDK refuses to start
# without one.
_PLACEHOLDER_KEY = "not-needed"
# How much of a rejected reply is quoted back to the model in the repair request.
_QUOTE_CHARS = 2000
# A reply may run to this many times its role's estimated length (core.llm.prompts) before the
# server stops it: 3x the guesses (1,000 tokens for a graph chunk, 300 for an answer) leaves room
# for a verbose model while a runaway (6,905 tokens over 480 s in issue 34) ends at 3,000.
_MAX_TOKENS_FACTOR = 3
_MIN_MAX_TOKENS = 256
_TOOL_MAX_TOKENS = 1024  # one tool-calling turn: a call's arguments or a short summary
# Connecting is quick when the server is up (a refused or unknown host fails at once); the read
# timeout instead covers a request that waits in a busy server's queue.
_CONNECT_TIMEOUT_S = 10.0
# A streamed reply ends by its max_tokens at this slowest rate, after the read timeout: a tenth
# of the slowest generation measured on a one-slot CPU llama-server (18 tokens/s, issue 34).
_MIN_TOKENS_PER_S = 2.0
# The model's speed before any call of this process has measured it: the slowest rates measured
# on a one-slot CPU llama-server in issue 34 (prompt 105-123, generation 18-27 tokens/s), so an
# unmeasured endpoint's time is overestimated rather than under.
_PROMPT_TOKENS_PER_S = 105.0
_COMPLETION_TOKENS_PER_S = 18.0


def max_tokens(role: Prompt) -> int:
    """The token limit sent with every call of a role (the longest estimate, times a margin)."""
    guess = max(role.completion_tokens({"mode": "graph"}), role.completion_tokens({}))
    return max(_MIN_MAX_TOKENS, _MAX_TOKENS_FACTOR * guess)


@dataclass(frozen=True)
class _Prepared:
    """A call ready to send: the rendered prompt, its cache key, and the completion tokens the
    estimate prices it at (the role's figure for these variables: a graph chunk's, not an index
    chunk's), so the rate measured on it is the rate the estimate is priced at."""

    role: Prompt
    model: str
    system: str
    user: str
    key: str
    completion: int


# The most a string or a list may hold in the schema sent, where a field names no bound of its
# own (`json_schema_extra`): a grammar-building server then cannot let a model run on. A 0.5B
# model under llama.cpp's grammar wrote task turns, plans and rewrites until the token limit
# cut them (480-900 tokens, 40-90 s each on one CPU thread, issue 34), each then repaired.
# Well above what a field needs (the longest measured: a 180-character thought), and under
# llama.cpp's cap on a grammar's repetitions (about 2,000).
GRAMMAR_STRING_CHARS = 400
GRAMMAR_LIST_ITEMS = 12


def _schema_json(schema: type[BaseModel]) -> dict[str, Any]:
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


class LLMClient:
    """Structured LLM calls against one OpenAI-compatible endpoint. Safe to share between threads."""

    def __init__(
        self,
        settings: Settings,
        cache: LLMCache | None = None,
        *,
        timeout_s: float = 300,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        min_tokens_per_s: float = _MIN_TOKENS_PER_S,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.timeout_s = timeout_s
        self.min_tokens_per_s = min_tokens_per_s
        # (connect, read, write, pool), the form the OpenAI SDK's HTTP client takes.
        self._timeout = (min(timeout_s, _CONNECT_TIMEOUT_S), timeout_s, timeout_s, timeout_s)
        self.base_url = (settings.openai_base_url or DEFAULT_BASE_URL).rstrip("/")
        self.shown_url = public_url(self.base_url)  # for messages and logs
        # What the endpoint was found to do, asked at the first call that needs it (`auto`).
        self._prober = Prober(self.base_url, settings.openai_api_key, timeout_s=timeout_s)
        self.stats = LLMStats()
        self._policy = RetryPolicy(max_attempts=max_attempts, backoff_s=backoff_s)
        # Bounds requests in flight across every caller of this client, not only call_many:
        # the configured value is the ceiling, the server's own slots (asked once) lower it.
        self.concurrency = Concurrency(settings.llm_concurrency)
        self._asked_slots = False
        # Seconds per estimated token of the calls answered so far (None: none measured yet).
        self._spent = [0.0, 0.0]  # seconds, estimated completion-equivalent tokens
        # (model, schema) for structured output; ("tools", tool names) for tool calling.
        self._runnables: dict[tuple[str, Any], Runnable] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.shown_url!r}, model={self.settings.chat_model!r})"

    # --- public API ------------------------------------------------------------------------

    @property
    def _slots(self) -> Concurrency:
        if not self._asked_slots:
            with self._lock:
                if not self._asked_slots:
                    slots = server_slots(self.base_url)
                    if slots is not None:
                        self.concurrency.cap(slots)
                        log.info("%s serves %d request(s) at once", self.shown_url, slots)
                    self._asked_slots = True
        return self.concurrency

    def capabilities(self, model: str | None = None, *, fresh: bool = False) -> Capabilities:
        """What the endpoint does for `model` (the chat model by default): probed once per
        process, or again with `fresh` (test connection)."""
        return self._prober.get(model or self.settings.chat_model, fresh=fresh)

    @property
    def method(self) -> str:
        """The structured-output method of the chat model's calls."""
        return self.method_for(self.settings.chat_model)

    def method_for(self, model: str) -> str:
        """The structured-output method for calls on `model`: the setting, or under `auto`
        what the endpoint honours (core.llm.capabilities.choose_method)."""
        if self.settings.structured_output != "auto":
            return self.settings.structured_output
        return choose_method(self._prober.get(model))

    def _limit(self, tokens: int) -> dict[str, Any]:
        """The token limit as the endpoint reads it: OpenAI's own API takes
        `max_completion_tokens` (what langchain sends for `max_tokens`); llama-server, vLLM and
        Ollama read `max_tokens`, sent as it is in the body."""
        if self.base_url == DEFAULT_BASE_URL:
            return {"max_tokens": tokens}
        return {"extra_body": {"max_tokens": tokens}}

    def model_for(self, role: Prompt) -> str:
        """The model a role runs on: the fast model for `fast` roles, else the chat model."""
        if role.fast:
            return self.settings.fast_model or self.settings.chat_model
        return self.settings.chat_model

    def call(
        self,
        role: Prompt[T],
        variables: Mapping[str, object],
        rejections: Rejections | None = None,
    ) -> T:
        """Run one role and return its validated output; raise LLMError or LLMOutputError.

        What had to be dropped from a careless reply to get there is counted in `rejections`.
        """
        return _typed(role, self._run(self._prepare(role, variables), rejections))

    def call_streaming(
        self,
        role: Prompt[T],
        variables: Mapping[str, object],
        on_partial: Callable[[dict[str, Any]], None],
        rejections: Rejections | None = None,
    ) -> T:
        """`call`, reading the reply as the model writes it: `on_partial` gets the output's
        fields parsed so far (a dict, its last string possibly unfinished) each time they grow.

        What it returns is validated exactly as `call`'s is; a reply that needs a repair is
        repaired without streaming, and a cached output is handed over whole.
        """
        return _typed(role, self._run(self._prepare(role, variables), rejections, on_partial))

    def call_many(
        self,
        role: Prompt[T],
        variables_list: Sequence[Mapping[str, object]],
        rejections: Rejections | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> list[T | LLMError]:
        """Run a role over many inputs in parallel; failures come back in place, not raised.

        When `cancel` is set the call returns at once, raising CallsCancelled: requests in
        flight are abandoned (their daemon threads end when the endpoint answers or times out,
        keeping neither the caller nor the process), and no further request is sent.
        """
        # Rendering first means a template mistake raises before any request is sent.
        prepared = [self._prepare(role, v) for v in variables_list]
        if not prepared:
            return []
        down: list[EndpointUnreachableError] = []

        def one(item: _Prepared) -> BaseModel | LLMError:
            # Once the endpoint is known to be unreachable, the rest of the batch fails fast
            # instead of each item spending its own retries and backoff on the same fact.
            if down:
                self.stats.add("failures")
                return down[0]
            try:
                return self._run(item, rejections)
            except EndpointUnreachableError as exc:
                down.append(exc)
                return exc
            except LLMError as exc:
                return exc

        workers = min(self._slots.ceiling, len(prepared))
        out = _run_abandonable(one, prepared, workers, cancel)
        return [a if isinstance(a, LLMError) else _typed(role, a) for a in out]

    def estimate(
        self, role: Prompt[Any], variables_list: Sequence[Mapping[str, object]]
    ) -> dict[str, Any]:
        """Estimate the calls and tokens a batch would cost; cached inputs cost nothing."""
        calls = cached = prompt_tokens = completion_tokens = 0
        # Outside json_mode the schema travels as response_format or a tool, still as tokens.
        schema_tokens = estimate_tokens(json.dumps(_schema_json(role.schema), ensure_ascii=False))
        for variables in variables_list:
            item = self._prepare(role, variables)
            if self.cache is not None and self.cache.get(item.key) is not None:
                cached += 1
                continue
            calls += 1
            prompt_tokens += estimate_tokens(item.system) + estimate_tokens(item.user) + 8
            if self.method_for(item.model) != "json_mode":
                prompt_tokens += schema_tokens
            completion_tokens += role.completion_tokens(variables)
        return {
            "calls": calls,
            "cached": cached,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "model": self.model_for(role),
        }

    def seconds_for(self, calls: int, prompt_tokens: int, completion_tokens: int) -> float:
        """How long the model would take over these calls at the rate measured so far (or the
        slow defaults), with as many at once as the server serves."""
        with self._lock:
            seconds, tokens = self._spent
        probed = self._prober.peek(self.settings.chat_model)
        if not tokens and probed is not None and probed.spent is not None:
            # No call measured yet in this process: the probe's replies measured the endpoint
            # (a loaded machine's model runs at a third of its idle speed, issue 34).
            seconds, prompt, completion = probed.spent
            tokens = _equivalent(prompt, completion)
        work = _equivalent(prompt_tokens, completion_tokens)
        per_token = seconds / tokens if tokens else 1 / _COMPLETION_TOKENS_PER_S
        return work * per_token / max(min(self._slots.limit, max(calls, 1)), 1)

    # --- one call ---------------------------------------------------------------------------

    def _prepare(self, role: Prompt, variables: Mapping[str, object]) -> _Prepared:
        user = role.render(variables)
        schema = _schema_json(role.schema)
        model = self.model_for(role)
        if self.method_for(model) == "json_mode":
            # json_mode only promises *some* JSON object, so the prompt has to carry the shape.
            user += (
                "\n\nReply with one JSON object, without prose or code fences, that matches"
                f" this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
            )
        key = cache_key(model, f"{role.system}\n\n{user}", schema)
        return _Prepared(
            role=role,
            model=model,
            system=role.system,
            user=user,
            key=key,
            completion=role.completion_tokens(variables),
        )

    def _run(
        self,
        item: _Prepared,
        rejections: Rejections | None = None,
        on_partial: Callable[[dict[str, Any]], None] | None = None,
    ) -> BaseModel:
        if self.cache is not None and (hit := self.cache.get(item.key)) is not None:
            try:
                result = item.role.schema.model_validate(hit)
            except ValidationError:
                pass  # unreadable under the current schema: ask again and overwrite it
            else:
                self.stats.add("cache_hits")
                if on_partial is not None:
                    on_partial(result.model_dump(mode="json"))
                return result
        started = time.perf_counter()
        try:
            result = self._generate(item, rejections, on_partial)
        except LLMError:
            self.stats.add("failures")
            raise
        took = time.perf_counter() - started
        log.info("%s answered by %s in %.2f s", item.role.name, item.model, took)
        with self._lock:
            self._spent[0] += took
            self._spent[1] += _equivalent(
                estimate_tokens(item.system) + estimate_tokens(item.user),
                item.completion,
            )
        if self.cache is not None:
            self.cache.put(item.key, item.model, result.model_dump(mode="json"))
        return result

    def _generate(
        self,
        item: _Prepared,
        rejections: Rejections | None,
        on_partial: Callable[[dict[str, Any]], None] | None = None,
    ) -> BaseModel:
        messages: list[BaseMessage] = [SystemMessage(item.system), HumanMessage(item.user)]
        result, problem, reply = self._attempt(item, messages, rejections, on_partial)
        if result is not None:
            return result
        self.stats.add("repairs")
        log.info(
            "%s output from %s was invalid (%s); asking once for a repair",
            item.role.name,
            item.model,
            problem,
        )
        messages.append(HumanMessage(_repair_request(problem, reply)))
        result, problem, _ = self._attempt(item, messages, rejections)
        if result is not None:
            return result
        raise LLMOutputError(
            redact(
                f"The model {item.model!r} at {self.shown_url} did not return valid"
                f" {item.role.schema.__name__} output for the {item.role.name!r} role, even after"
                f" one repair request: {problem}.",
                self.settings.openai_api_key,
            )
        )

    def _attempt(
        self,
        item: _Prepared,
        messages: list[BaseMessage],
        rejections: Rejections | None,
        on_partial: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[BaseModel | None, str, str]:
        """Send one request (with transient retries): (validated output | None, problem, reply).

        A reply the structured parser refuses is salvaged (core.llm.boundary): what validates
        is kept, what does not is counted in `rejections`; only a reply with nothing usable
        asks for a repair.
        """
        runnable = self._runnable(item.model, item.role)

        def send() -> dict[str, Any]:
            with self._slots:
                if on_partial is not None:
                    return self._stream(item, messages, on_partial)
                return runnable.invoke(messages)

        try:
            out = run_with_retries(
                send, self._policy, self.stats, what=f"LLM request to {self.shown_url}"
            )
        except openai.LengthFinishReasonError as exc:
            # The reply reached its max_tokens: read like a cut reply, salvaged where it can be.
            cut = _cut_text(exc)
            result, dropped = salvage(item.role.schema, cut) if cut else (None, [])
            if result is None:
                return None, _describe(exc), cut
            self.stats.add("salvaged")
            if rejections is not None:
                rejections.extend(item.role.name, dropped)
            return result, "", cut
        except openai.ContentFilterFinishReasonError as exc:
            # The SDK raises this while reading a reply that arrived: an output problem.
            return None, _describe(exc), ""
        except openai.OpenAIError as exc:
            raise endpoint_error(
                exc,
                base_url=self.base_url,
                attempts=self._policy.max_attempts if is_transient(exc) else 1,
                model=item.model,
                secret=self.settings.openai_api_key,
            ) from None  # the SDK's error may quote the server, and a server may echo the key
        except Exception as exc:
            # langchain builds its message objects from the reply and refuses some (tool call
            # arguments that are a list, not an object): a reply problem like any other.
            log.debug(
                "%s reply from %s could not be read", item.role.name, item.model, exc_info=True
            )
            return None, f"the reply could not be read ({_describe(exc)})", ""
        raw = out.get("raw")
        reply = _reply_text(raw) if isinstance(raw, AIMessage) else ""
        parsed = out.get("parsed")
        if out.get("parsing_error") is not None:
            problem = _describe(out["parsing_error"])
        elif parsed is None:
            problem = "the reply contained no structured output"
        else:
            try:
                return item.role.schema.model_validate(parsed), "", reply
            except ValidationError as exc:
                problem = _describe(exc)
        source = parsed if isinstance(parsed, dict) and out.get("parsing_error") is None else reply
        result, dropped = salvage(item.role.schema, source)
        if result is None:
            return None, problem, reply
        self.stats.add("salvaged")
        log.info("%s output from %s was salvaged (%s)", item.role.name, item.model, problem)
        if rejections is not None:
            rejections.extend(item.role.name, dropped)
        return result, "", reply

    def invoke_tools(self, messages: Sequence[Any], tools: Sequence[Mapping[str, Any]]) -> Any:
        """One chat turn on the chat model with these tools bound (OpenAI function specs).

        Returns the model's `AIMessage` (its `tool_calls` say what to run). Transient failures
        are retried like every other call, and a failure is worded the same way.
        """
        model = self._tool_model(tuple(sorted(t["function"]["name"] for t in tools)), tools)
        with self._slots:
            started = time.perf_counter()
            try:
                reply = run_with_retries(
                    lambda: model.invoke(list(messages)),
                    self._policy,
                    self.stats,
                    what="tool call",
                )
                log.info(
                    "a tool-calling turn answered by %s in %.2f s",
                    self.settings.chat_model,
                    time.perf_counter() - started,
                )
                return reply
            except openai.OpenAIError as exc:
                self.stats.add("failures")
                raise endpoint_error(
                    exc,
                    base_url=self.base_url,
                    attempts=self._policy.max_attempts,
                    model=self.settings.chat_model,
                    secret=self.settings.openai_api_key,
                ) from None
            except Exception as exc:  # a reply langchain cannot turn into a message
                self.stats.add("failures")
                log.debug("tool-calling reply could not be read", exc_info=True)
                raise LLMOutputError(
                    redact(
                        f"The model {self.settings.chat_model!r} at {self.shown_url} answered a"
                        f" tool-calling turn in a form that could not be read: {_describe(exc)}.",
                        self.settings.openai_api_key,
                    )
                ) from None

    def _tool_model(self, key: tuple[str, ...], tools: Sequence[Mapping[str, Any]]) -> Runnable:
        with self._lock:
            model = self._runnables.get(("tools", key))
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
                self._runnables[("tools", key)] = model
            return model

    def _stream(
        self,
        item: _Prepared,
        messages: list[BaseMessage],
        on_partial: Callable[[dict[str, Any]], None],
    ) -> dict[str, Any]:
        """One streamed request, read into what the structured runnable returns: the reply as
        `raw`, and `parsed` or the `parsing_error` for the same checks as an unstreamed one."""
        model = self._streaming_model(item.model, item.role)
        pieces: list[str] = []
        shown: dict[str, Any] | None = None
        # A reply that keeps streaming past what its token limit allows at the slowest rate is
        # cut here and read like any cut reply (a server may ignore max_tokens).
        deadline = time.monotonic() + self.timeout_s + max_tokens(item.role) / self.min_tokens_per_s
        stream = model.stream(messages)
        for chunk in stream:
            if time.monotonic() > deadline:
                log.info(
                    "%s reply from %s passed its deadline; read as cut", item.role.name, item.model
                )
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

    def _streaming_model(self, model: str, role: Prompt) -> Runnable:
        """The chat model asked for the schema the way `method_for` says, to be streamed.

        The response format goes in the request body as it is (`extra_body`): langchain-openai
        would stream a `response_format` argument through the SDK's parse helper, which sends
        the whole reply again at the end.
        """
        schema = role.schema
        limit = self._limit(max_tokens(role))
        method = self.method_for(model)
        with self._lock:
            runnable = self._runnables.get(("stream", (model, schema, method)))
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
                    "function": described | {"parameters": _schema_json(schema)},
                }
                runnable = llm.bind_tools([tool], tool_choice=schema.__name__, extra_body=extra)
            elif method == "json_mode":
                runnable = llm.bind(extra_body=extra | {"response_format": {"type": "json_object"}})
            else:
                format_ = described | {"schema": _schema_json(schema), "strict": False}
                runnable = llm.bind(
                    extra_body=extra
                    | {"response_format": {"type": "json_schema", "json_schema": format_}}
                )
            self._runnables[("stream", (model, schema, method))] = runnable
            return runnable

    def _runnable(self, model: str, role: Prompt) -> Runnable:
        method = self.method_for(model)
        with self._lock:
            runnable = self._runnables.get((model, (role.schema, method)))
            if runnable is None:
                runnable = self._build_runnable(model, role, method)
                self._runnables[(model, (role.schema, method))] = runnable
            return runnable

    def _build_runnable(self, model: str, role: Prompt, method: str) -> Runnable:
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
            # `attributes` map and fields with defaults. Validation happens here instead.
            target = {
                "name": schema.__name__,
                "description": (schema.__doc__ or schema.__name__).strip(),
                "schema": _schema_json(schema),
                "strict": False,
            }
        kind = cast(Literal["function_calling", "json_mode", "json_schema"], method)
        return llm.with_structured_output(target, method=kind, include_raw=True)


_POLL_S = 0.05  # how often a waiting caller looks at its cancel event


def _run_abandonable(
    one: Callable[[_Prepared], BaseModel | LLMError],
    items: list[_Prepared],
    workers: int,
    cancel: threading.Event | None,
) -> list[BaseModel | LLMError]:
    """`one` over `items` on `workers` daemon threads, in order; CallsCancelled on `cancel`.

    Daemon threads rather than a ThreadPoolExecutor, whose workers the interpreter joins at
    exit: a request abandoned by a cancel must hold up neither the build nor the process.
    """
    results: list[BaseModel | LLMError | BaseException | None] = [None] * len(items)
    todo = iter(range(len(items)))
    lock = threading.Lock()
    left = [len(items)]
    finished = threading.Event()

    def work() -> None:
        while not (cancel is not None and cancel.is_set()):
            with lock:
                index = next(todo, None)
            if index is None:
                return
            try:
                results[index] = one(items[index])
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who re-raises
                results[index] = exc
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    finished.set()

    for _ in range(workers):
        threading.Thread(target=work, name="zhixing-llm", daemon=True).start()
    while not finished.wait(_POLL_S if cancel is not None else None):
        if cancel is not None and cancel.is_set():
            raise CallsCancelled
    out: list[BaseModel | LLMError] = []
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, LLMError):
            raise result
        out.append(cast(BaseModel | LLMError, result))
    return out


def make_client(settings: Settings, cache: LLMCache | None, **options: Any) -> LLMClient | None:
    """The one way Zhixing makes its model client: the one the settings ask for, or None in the
    built-in offline mode. `options` are `LLMClient`'s (timeout_s, max_attempts, ...)."""
    if not settings.llm_configured:
        return None
    return LLMClient(settings, cache, **options)


def _typed(role: Prompt[T], output: BaseModel) -> T:
    """The output `_run` validated against `role.schema`, as the role's type."""
    if not isinstance(output, role.schema):  # a cached or repaired output is validated too
        raise TypeError(f"{role.name} returned {type(output).__name__}, not {role.schema.__name__}")
    return output


def _reply_text(message: AIMessage) -> str:
    """What the model answered, as text, whichever channel it used (content or a tool call)."""
    if isinstance(message.content, str) and message.content.strip():
        return message.content
    for call in message.invalid_tool_calls:
        if call.get("args"):
            return str(call["args"])
    for made in message.tool_calls:
        return json.dumps(made.get("args", {}), ensure_ascii=False)
    return ""


def _equivalent(prompt_tokens: int, completion_tokens: int) -> float:
    """Prompt and completion tokens as completion tokens' worth of time."""
    return completion_tokens + prompt_tokens * _COMPLETION_TOKENS_PER_S / _PROMPT_TOKENS_PER_S


def _cut_text(exc: openai.LengthFinishReasonError) -> str:
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


def _describe(exc: BaseException) -> str:
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


def _repair_request(problem: str, reply: str) -> str:
    quoted = reply[:_QUOTE_CHARS] + ("…" if len(reply) > _QUOTE_CHARS else "")
    shown = f"\n<previous_reply>\n{quoted}\n</previous_reply>" if quoted else ""
    return (
        f"Your previous reply could not be used: {problem}.{shown}\n"
        "Answer the same task again, with only the structured output, matching the schema"
        " exactly (all required fields, correct types)."
    )
