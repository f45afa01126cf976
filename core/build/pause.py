"""Pause a build while the LLM endpoint is away, instead of stopping it, and stop waiting for a
call once the build is cancelled (docs/architecture.md §4).

Every LLM call site of the enrich stage runs through a `PauseGuard`: when the endpoint cannot
be reached, the same call is tried again with a capped backoff (the calls that had finished
come back from `llm_cache`), until the endpoint returns, the build is cancelled, or the pause
has lasted `Settings.llm_max_pause_s` — then the error goes up and the build stops, resumable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["BuildCancelled", "PauseGuard", "pause_message", "until_cancelled"]

T = TypeVar("T")

_FIRST_DELAY_S = 0.5
_MAX_DELAY_S = 30.0
_CANCEL_POLL_S = 0.05  # how often a call in hand looks at the build's cancel


class BuildCancelled(Exception):  # noqa: N818 - a signal inside the pipeline, not an error
    """The build was cancelled while it waited for the endpoint."""


def _unreachable(exc: BaseException) -> bool:
    # Imported here: core.llm loads langchain, which an offline build never needs.
    from ..llm.retry import EndpointUnreachableError

    return isinstance(exc, EndpointUnreachableError)


def _busy(exc: BaseException) -> bool:
    from ..llm.retry import EndpointBusyError

    return isinstance(exc, EndpointBusyError) or isinstance(exc.__cause__, EndpointBusyError)


def pause_message(endpoint: str, every_s: float, *, busy: bool = False) -> str:
    """The pause as a user reads it: "cannot be reached" only when it could not be connected
    to; a server that was reached but answered nothing in time is busy."""
    if busy:
        return (
            f"The LLM endpoint at {endpoint} is busy and did not answer in time; the build is"
            f" paused and retries every {every_s:.0f} s."
        )
    return (
        f"The LLM endpoint at {endpoint} cannot be reached; the build is paused and retries"
        f" every {every_s:.0f} s."
    )


class PauseGuard:
    """Run a call, pausing and retrying it while the endpoint is unreachable. Thread-safe."""

    def __init__(
        self,
        *,
        max_pause_s: float,
        cancel: threading.Event,
        endpoint: str,
        on_pause: Callable[[str], None],
        on_resume: Callable[[], None],
    ) -> None:
        self.max_pause_s = max_pause_s
        self.cancel = cancel
        self.endpoint = endpoint
        self.on_pause = on_pause
        self.on_resume = on_resume
        # Short pauses for a short limit: a test's 10 s limit retries every second or so.
        self.cap_s = max(min(_MAX_DELAY_S, max_pause_s / 10), 0.05)
        self.pauses = 0  # how many times the build paused (for reports and tests)

    def __call__(self, call: Callable[[], T]) -> T:
        since: float | None = None
        delay = min(_FIRST_DELAY_S, self.cap_s)
        while True:
            try:
                result = call()
            except Exception as exc:
                if not _unreachable(exc):
                    raise
                now = time.monotonic()
                if since is None:
                    since = now
                    self.pauses += 1
                left = self.max_pause_s - (now - since)
                if left <= 0:
                    raise
                if self.cancel.is_set():
                    raise BuildCancelled from None
                self.on_pause(pause_message(self.endpoint, max(delay, 1.0), busy=_busy(exc)))
                if self.cancel.wait(min(delay, left)):
                    raise BuildCancelled from None
                delay = min(delay * 2, self.cap_s)
                continue
            if since is not None:
                self.on_resume()
            return result


def until_cancelled(call: Callable[[], T], cancel: threading.Event) -> T:
    """Run `call`, but stop waiting for it once `cancel` is set (BuildCancelled).

    It runs in a daemon thread, which an abandoned call keeps to itself until it ends (a slice
    of a local model, one request to an embedding endpoint): it holds neither the build nor
    the process.
    """
    if cancel.is_set():
        raise BuildCancelled
    box: list[tuple[bool, Any]] = []
    ended = threading.Event()

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the waiting thread
            box.append((False, exc))
        finally:
            ended.set()

    threading.Thread(target=run, name="zhixing-cancellable", daemon=True).start()
    while not ended.wait(_CANCEL_POLL_S):
        if cancel.is_set():
            raise BuildCancelled
    ok, value = box[0]
    if not ok:
        raise value
    return cast(T, value)
