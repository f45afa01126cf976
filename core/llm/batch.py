"""A batch of calls run in parallel on daemon threads (`call_many`): each failure comes back in
its place, an unreachable endpoint fails the rest of the batch at once, a cancel abandons it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, cast

from pydantic import BaseModel

from ..errors import LLMError
from .protocol import CallsCancelled
from .retry import EndpointUnreachableError, LLMStats

__all__ = ["run_abandonable", "run_batch"]

Item = TypeVar("Item")

_POLL_S = 0.05  # how often a waiting caller looks at its cancel event


def run_batch(
    run: Callable[[Item], BaseModel],
    items: list[Item],
    workers: int,
    cancel: threading.Event | None,
    stats: LLMStats,
) -> list[BaseModel | LLMError]:
    """`run` over `items` on `workers` threads, in order, an LLMError in place of each output
    it raised (counted in `stats` where it was not `run`'s own); CallsCancelled on `cancel`."""
    down: list[EndpointUnreachableError] = []

    def one(item: Item) -> BaseModel | LLMError:
        # Once the endpoint is known to be unreachable, the rest of the batch fails fast
        # instead of each item spending its own retries and backoff on the same fact.
        if down:
            stats.add("failures")
            return down[0]
        try:
            return run(item)
        except EndpointUnreachableError as exc:
            down.append(exc)
            return exc
        except LLMError as exc:
            return exc

    return run_abandonable(one, items, workers, cancel)


def run_abandonable(
    one: Callable[[Item], BaseModel | LLMError],
    items: list[Item],
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
