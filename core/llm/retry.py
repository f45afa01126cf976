"""Retries and error wording shared by the chat client and the embedder.

langchain's and the OpenAI SDK's own retries are switched off (`max_retries=0`) so that every
HTTP request passes through `run_with_retries`: the counters in `LLMStats` are then exact, and
the error a user finally sees is one sentence naming the endpoint, never the API key.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TypeVar

import openai

from ..errors import LLMError

__all__ = [
    "DEFAULT_BASE_URL",
    "EndpointBusyError",
    "EndpointFailingError",
    "EndpointRefusedError",
    "EndpointUnreachableError",
    "Concurrency",
    "LLMStats",
    "RetryPolicy",
    "endpoint_error",
    "is_transient",
    "public_url",
    "redact",
    "run_with_retries",
]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# The statuses the OpenAI SDK itself treats as worth retrying: timeout, conflict, rate limit.
_TRANSIENT_STATUS = frozenset({408, 409, 429})
# What a gateway answers while the model server behind it is down: the endpoint is away.
_AWAY_STATUS = frozenset({502, 503, 504})
# A server asking for a longer pause than this is better reported than waited for.
_MAX_RETRY_AFTER_S = 60.0
_KEY_PATTERN = re.compile(r"\b(sk|key|token)-[A-Za-z0-9_*.\-]{6,}")

T = TypeVar("T")


class EndpointUnreachableError(LLMError):
    """The endpoint is away: it could not be connected to (refused, unknown host, no route),
    or its gateway kept saying it is down (HTTP 502, 503, 504). A build
    pauses on this and goes on when the endpoint is back (core/build/pause.py)."""


class EndpointRefusedError(LLMError):
    """The endpoint refuses this kind of request whatever it holds: the credentials, the model
    name or the structured-output method is wrong. Nothing is gained by trying other inputs."""


class EndpointFailingError(LLMError):
    """The endpoint kept failing one request (HTTP 500 and the like) after every retry. Alone it
    costs that item its LLM step; when every request of a batch fails so, the endpoint is taken
    as away."""


class EndpointBusyError(EndpointFailingError):
    """The endpoint was reached but kept not answering in time: it is busy, not away."""


@dataclass
class LLMStats:
    """Counters of one client, safe to update from many threads."""

    calls: int = 0  # HTTP requests sent, retries and repairs included
    cache_hits: int = 0
    repairs: int = 0
    salvaged: int = 0  # replies the parser refused but core.llm.boundary could read in part
    retries: int = 0
    failures: int = 0  # calls that ended in an LLMError
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, counter: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, counter, getattr(self, counter) + n)

    def snapshot(self) -> dict[str, int]:
        """Return the counters as a plain dict (a consistent copy)."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}


# Replies in a row, none timed out, before one more request may be in flight again: slow enough
# that a server which just timed out one is not flooded at once (the one-slot llama-server of
# issue 34 took 10-60 s a reply, so regrowing from 1 to 8 takes 8 x 4 replies).
_GROW_AFTER = 4


class Concurrency:
    """How many requests may be in flight now: the server's slots (or the configured ceiling),
    halved on a timed-out request before it is retried, grown by one after `_GROW_AFTER`
    replies in a row. A context manager around one request; thread-safe."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = max(ceiling, 1)
        self.limit = self.ceiling
        self._in_flight = 0
        self._answered = 0
        self._cond = threading.Condition()

    def cap(self, slots: int) -> None:
        """Lower the ceiling to what the server says it serves at once."""
        with self._cond:
            self.ceiling = max(min(self.ceiling, slots), 1)
            self.limit = min(self.limit, self.ceiling)

    def __enter__(self) -> Concurrency:
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
        return self

    def __exit__(self, kind: object, exc: BaseException | None, *_: object) -> None:
        with self._cond:
            self._in_flight -= 1
            if isinstance(exc, openai.APITimeoutError):
                # The server is still working on it: fewer at once, then the retry.
                self.limit = max(self.limit // 2, 1)
                self._answered = 0
                log.info("a request timed out; at most %d in flight from now", self.limit)
            elif exc is None:
                self._answered += 1
                if self._answered >= _GROW_AFTER and self.limit < self.ceiling:
                    self.limit += 1
                    self._answered = 0
            self._cond.notify_all()


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    backoff_s: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1.")

    def delay(self, attempt: int, exc: BaseException) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based)."""
        asked = _retry_after(exc)
        if asked is not None:
            return min(asked, _MAX_RETRY_AFTER_S)
        # Jitter spreads out the workers of a pool that all hit the same 429 or 503 at once.
        return float(self.backoff_s * 2 ** (attempt - 1) * random.uniform(1.0, 1.25))


def is_transient(exc: BaseException) -> bool:
    """Whether a failed request is worth sending again."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return False


def run_with_retries(
    send: Callable[[], T],
    policy: RetryPolicy,
    stats: LLMStats,
    *,
    what: str,
) -> T:
    """Call `send` until it succeeds, retrying transient failures with exponential backoff.

    The last transient failure, or the first other one, is re-raised for the caller to word.
    """
    for attempt in range(1, policy.max_attempts + 1):
        stats.add("calls")
        try:
            return send()
        except Exception as exc:
            if not is_transient(exc) or attempt == policy.max_attempts:
                raise
            pause = policy.delay(attempt, exc)
            stats.add("retries")
            log.info(
                "%s failed (%s); retry %d of %d in %.2f s",
                what,
                _short_reason(exc),
                attempt,
                policy.max_attempts - 1,
                pause,
            )
            time.sleep(pause)
    raise AssertionError("unreachable")  # the loop returns or raises


def redact(text: str, secret: str = "") -> str:
    """Remove an API key (and anything shaped like one) from text meant for a user or a log."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub(lambda m: f"{m.group(1)}-***", text)


def public_url(url: str) -> str:
    """The URL as it may be shown: without any user:password@ part."""
    return re.sub(r"^([a-z][a-z0-9+.\-]*://)[^/@]*@", r"\1", url, flags=re.I)


def endpoint_error(
    exc: BaseException, *, base_url: str, attempts: int, model: str, secret: str = ""
) -> LLMError:
    """Word a failed request as one sentence a user can act on (never quoting the key)."""
    url = public_url(base_url)
    if isinstance(exc, openai.APITimeoutError):
        # Connected, but no reply in time: the server is busy, not away (issue 34), so this
        # costs the one item its LLM step and never pauses the build as "cannot be reached".
        message = (
            f"The LLM endpoint at {url} was reached but did not answer in time, {attempts}"
            " attempt(s) in a row; the server is busy, so lower ZHIXING_LLM_CONCURRENCY or try"
            " again when it is idle."
        )
        return EndpointBusyError(redact(message, secret))
    if isinstance(exc, openai.APIConnectionError):
        message = (
            f"The LLM endpoint at {url} could not be reached after {attempts} attempt(s)"
            f" ({_short_reason(exc)}); check OPENAI_BASE_URL and that the server is running."
        )
        return EndpointUnreachableError(redact(message, secret))
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        detail = _server_detail(exc)
        if code == 429:
            message = (
                f"The LLM endpoint at {url} kept answering HTTP 429 (rate limited) after"
                f" {attempts} attempt(s); lower ZHIXING_LLM_CONCURRENCY or try again later."
            )
            # Rate limited past every retry: wait it out like an outage.
            return EndpointUnreachableError(redact(message, secret))
        elif code in _AWAY_STATUS:
            message = (
                f"The LLM endpoint at {url} kept answering HTTP {code} (unavailable) after"
                f" {attempts} attempt(s){detail}; check that the model server behind it is up."
            )
            return EndpointUnreachableError(redact(message, secret))
        elif code >= 500:
            message = (
                f"The LLM endpoint at {url} kept failing with HTTP {code} after {attempts}"
                f" attempt(s){detail}."
            )
            return EndpointFailingError(redact(message, secret))
        elif code in (401, 403):
            message = (
                f"The LLM endpoint at {url} rejected the credentials (HTTP {code}); check"
                " OPENAI_API_KEY."
            )
            return EndpointRefusedError(redact(message, secret))
        elif code == 404:
            message = (
                f"The LLM endpoint at {url} answered HTTP 404 for model {model!r}{detail};"
                " check the model name and that OPENAI_BASE_URL ends in /v1."
            )
            return EndpointRefusedError(redact(message, secret))
        elif code in (400, 422) and re.search(r"response_format|json_schema|tool", detail, re.I):
            message = (
                f"The LLM endpoint at {url} refused the structured-output request (HTTP {code})"
                f"{detail}; set ZHIXING_STRUCTURED_OUTPUT to function_calling or json_mode."
            )
            return EndpointRefusedError(redact(message, secret))
        else:
            message = f"The LLM endpoint at {url} refused the request with HTTP {code}{detail}."
        return LLMError(redact(message, secret))
    message = f"The LLM endpoint at {url} failed: {_short_reason(exc)}."
    return LLMError(redact(message, secret))


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:  # the other form the header may take: an HTTP date
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _server_detail(exc: openai.APIStatusError) -> str:
    """The server's own error message, shortened, as ': ...' (or '' when it gave none)."""
    body = exc.body
    text = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = str(inner.get("message", "") if isinstance(inner, dict) else inner)
    elif body is not None:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    text = " ".join(text.split()).rstrip(".")
    if len(text) > 200:
        text = text[:200] + "…"
    return f": {text}" if text else ""


def _short_reason(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    # Wrappers (langchain's, the SDK's) say "Connection error."; the root cause says which.
    reason = ""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        text = " ".join(str(seen).split())
        if text:
            reason = text
        seen = seen.__cause__ or seen.__context__
    reason = re.sub(r"^\[Errno -?\d+\]\s*", "", reason).rstrip(".")
    return reason[:160] or type(exc).__name__
