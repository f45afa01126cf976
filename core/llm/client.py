"""The LLM client: one structured call per role, cached, retried, repaired once, run in a pool.

`LLMClient` adds what a build needs around a structured request (`core.llm.structured`): the
SQLite cache, retries with backoff on transient failures (`core.llm.retry`), one repair
round-trip on invalid output (`core.llm.replies`, `core.llm.boundary`), a bound on concurrent
requests, the measured rate (`core.llm.pace`), and counters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from ..config import Settings
from ..errors import LLMError, LLMOutputError
from .batch import run_batch
from .boundary import Rejections, salvage
from .cache import LLMCache
from .capabilities import Capabilities, choose_method
from .pace import MIN_TOKENS_PER_S, Pace, batch_tokens
from .probe import Prober, server_slots
from .prompts import Prompt, T, estimate_tokens
from .replies import cut_text, describe, read_output, read_stream, repair_request
from .retry import (
    DEFAULT_BASE_URL,
    Concurrency,
    LLMStats,
    RetryPolicy,
    endpoint_error,
    is_transient,
    public_url,
    redact,
    run_with_retries,
)
from .structured import Prepared, Runnables, max_tokens, prepare

__all__ = ["LLMClient", "make_client"]

log = logging.getLogger(__name__)


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
        min_tokens_per_s: float = MIN_TOKENS_PER_S,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.timeout_s = timeout_s
        self.min_tokens_per_s = min_tokens_per_s
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
        self._pace = Pace()  # the rate of the calls answered so far
        self._runnables = Runnables(settings, self.base_url, timeout_s)
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

    def model_for(self, role: Prompt[Any]) -> str:
        """The model a role runs on: the vision model for a role with an image, the fast model
        for `fast` roles, else the chat model."""
        if role.image:
            return self.settings.vision_model or self.settings.chat_model
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
        workers = min(self._slots.ceiling, len(prepared))
        out = run_batch(
            lambda item: self._run(item, rejections), prepared, workers, cancel, self.stats
        )
        return [a if isinstance(a, LLMError) else _typed(role, a) for a in out]

    def estimate(
        self, role: Prompt[Any], variables_list: Sequence[Mapping[str, object]]
    ) -> dict[str, Any]:
        """Estimate the calls and tokens a batch would cost; cached inputs cost nothing."""
        items = [self._prepare(role, variables) for variables in variables_list]
        calls = [i for i in items if self.cache is None or self.cache.get(i.key) is None]
        prompt_tokens, completion_tokens = batch_tokens(role, calls, self.method_for)
        return {
            "calls": len(calls),
            "cached": len(items) - len(calls),
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "model": self.model_for(role),
        }

    def seconds_for(self, calls: int, prompt_tokens: int, completion_tokens: int) -> float:
        """How long the model would take over these calls at the rate measured so far (or the
        slow defaults), with as many at once as the server serves."""
        probed = self._prober.peek(self.settings.chat_model)
        return self._pace.seconds_for(
            prompt_tokens,
            completion_tokens,
            at_once=max(min(self._slots.limit, max(calls, 1)), 1),
            probed=None if probed is None else probed.spent,
        )

    # --- one call ---------------------------------------------------------------------------

    def _prepare(self, role: Prompt[Any], variables: Mapping[str, object]) -> Prepared:
        return prepare(role, variables, self.model_for(role), self.method_for)

    def _run(
        self,
        item: Prepared,
        rejections: Rejections | None = None,
        on_partial: Callable[[dict[str, Any]], None] | None = None,
    ) -> BaseModel:
        if self.cache is not None and (hit := self.cache.get(item.key)) is not None:
            try:
                result: BaseModel = item.role.schema.model_validate(hit)
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
        self._pace.record(
            took, estimate_tokens(item.system) + estimate_tokens(item.user), item.completion
        )
        if self.cache is not None:
            self.cache.put(item.key, item.model, result.model_dump(mode="json"))
        return result

    def _generate(
        self,
        item: Prepared,
        rejections: Rejections | None,
        on_partial: Callable[[dict[str, Any]], None] | None = None,
    ) -> BaseModel:
        messages: list[BaseMessage] = [SystemMessage(item.system), item.human()]
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
        messages.append(HumanMessage(repair_request(problem, reply)))
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
        item: Prepared,
        messages: list[BaseMessage],
        rejections: Rejections | None,
        on_partial: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[BaseModel | None, str, str]:
        """Send one request (with transient retries): (validated output | None, problem, reply).

        A reply the structured parser refuses is salvaged (core.llm.boundary): what validates
        is kept, what does not is counted in `rejections`; only a reply with nothing usable
        asks for a repair.
        """
        runnable = self._runnables.structured(item.model, item.role, self.method_for(item.model))

        def send() -> dict[str, Any]:
            with self._slots:
                if on_partial is not None:
                    return self._stream(item, messages, on_partial)
                reply: dict[str, Any] = runnable.invoke(messages)
                return reply

        try:
            out = run_with_retries(
                send, self._policy, self.stats, what=f"LLM request to {self.shown_url}"
            )
        except openai.LengthFinishReasonError as exc:
            # The reply reached its max_tokens: read like a cut reply, salvaged where it can be.
            cut = cut_text(exc)
            result, dropped = salvage(item.role.schema, cut) if cut else (None, [])
            if result is None:
                return None, describe(exc), cut
            self.stats.add("salvaged")
            if rejections is not None:
                rejections.extend(item.role.name, dropped)
            return result, "", cut
        except openai.ContentFilterFinishReasonError as exc:
            # The SDK raises this while reading a reply that arrived: an output problem.
            return None, describe(exc), ""
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
            return None, f"the reply could not be read ({describe(exc)})", ""
        read = read_output(item.role.schema, out)
        if read.output is None or not read.problem:
            return read.output, read.problem, read.reply
        self.stats.add("salvaged")
        log.info("%s output from %s was salvaged (%s)", item.role.name, item.model, read.problem)
        if rejections is not None:
            rejections.extend(item.role.name, read.dropped)
        return read.output, "", read.reply

    def _stream(
        self,
        item: Prepared,
        messages: list[BaseMessage],
        on_partial: Callable[[dict[str, Any]], None],
    ) -> dict[str, Any]:
        """One streamed request (`core.llm.replies.read_stream`), cut once it has run past the
        time its token limit takes at the slowest rate, after the read timeout."""
        runnable = self._runnables.streaming(item.model, item.role, self.method_for(item.model))
        deadline = time.monotonic() + self.timeout_s + max_tokens(item.role) / self.min_tokens_per_s
        return read_stream(
            runnable, messages, on_partial, deadline=deadline, role=item.role.name, model=item.model
        )

    def invoke_tools(self, messages: Sequence[Any], tools: Sequence[Mapping[str, Any]]) -> Any:
        """One chat turn on the chat model with these tools bound (OpenAI function specs).

        Returns the model's `AIMessage` (its `tool_calls` say what to run). Transient failures
        are retried like every other call, and a failure is worded the same way.
        """
        model = self._runnables.tools(tuple(sorted(t["function"]["name"] for t in tools)), tools)
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
                        f" tool-calling turn in a form that could not be read: {describe(exc)}.",
                        self.settings.openai_api_key,
                    )
                ) from None


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
