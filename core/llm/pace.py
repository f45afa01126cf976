"""What calls cost: the tokens a batch of calls would take, how fast the model answers (the
rate measured on the calls of this process), and so the time the batch would take at it (the
build's estimate, `core.build.estimate`).

Prompt and completion tokens are priced as one unit, completion tokens' worth of time, at the
slowest rates measured on the real model until a call (or the endpoint's probe) has measured it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .prompts import Prompt, estimate_tokens
from .structured import Prepared, schema_json

__all__ = ["MIN_TOKENS_PER_S", "Pace", "batch_tokens", "equivalent"]

# A streamed reply ends by its max_tokens at this slowest rate, after the read timeout: a tenth
# of the slowest generation measured on a one-slot CPU llama-server (18 tokens/s, issue 34).
MIN_TOKENS_PER_S = 2.0
# The model's speed before any call of this process has measured it: the slowest rates measured
# on a one-slot CPU llama-server in issue 34 (prompt 105-123, generation 18-27 tokens/s), so an
# unmeasured endpoint's time is overestimated rather than under.
_PROMPT_TOKENS_PER_S = 105.0
_COMPLETION_TOKENS_PER_S = 18.0


def batch_tokens(
    role: Prompt[Any], calls: Sequence[Prepared], method_for: Callable[[str], str]
) -> tuple[int, int]:
    """The prompt and completion tokens these calls of `role` would cost, each asked for by
    the method `method_for` its model."""
    prompt_tokens = completion_tokens = 0
    # Outside json_mode the schema travels as response_format or a tool, still as tokens.
    schema_tokens = estimate_tokens(json.dumps(schema_json(role.schema), ensure_ascii=False))
    for item in calls:
        prompt_tokens += estimate_tokens(item.system) + estimate_tokens(item.user) + 8
        if method_for(item.model) != "json_mode":
            prompt_tokens += schema_tokens
        completion_tokens += item.completion
    return prompt_tokens, completion_tokens


def equivalent(prompt_tokens: int, completion_tokens: int) -> float:
    """Prompt and completion tokens as completion tokens' worth of time."""
    return completion_tokens + prompt_tokens * _COMPLETION_TOKENS_PER_S / _PROMPT_TOKENS_PER_S


class Pace:
    """Seconds per estimated token of the calls answered so far. Safe to share between threads."""

    def __init__(self) -> None:
        self._spent = [0.0, 0.0]  # seconds, estimated completion-equivalent tokens
        self._lock = threading.Lock()

    def record(self, seconds: float, prompt_tokens: int, completion_tokens: int) -> None:
        """Count one call that took `seconds` over the tokens its estimate prices it at."""
        with self._lock:
            self._spent[0] += seconds
            self._spent[1] += equivalent(prompt_tokens, completion_tokens)

    def seconds_for(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        at_once: int,
        probed: tuple[float, int, int] | None = None,
    ) -> float:
        """How long this work would take at the rate measured so far (or the slow defaults),
        `at_once` calls at a time. `probed`, the endpoint's probe (seconds, prompt tokens,
        completion tokens), stands in while no call has been measured."""
        with self._lock:
            seconds, tokens = self._spent
        if not tokens and probed is not None:
            # No call measured yet in this process: the probe's replies measured the endpoint
            # (a loaded machine's model runs at a third of its idle speed, issue 34).
            seconds, prompt, completion = probed
            tokens = equivalent(prompt, completion)
        work = equivalent(prompt_tokens, completion_tokens)
        per_token = seconds / tokens if tokens else 1 / _COMPLETION_TOKENS_PER_S
        return work * per_token / at_once
