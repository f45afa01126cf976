"""The "test connection" button: what each configured model can do, one small structured call
to each, and one embedding.

Each model's endpoint is probed afresh (core/llm/capabilities.py: json_schema, json_object,
tool calls, streaming, slots), then called through the same client the builds use (structured
output method, retries off), so a success here means extraction and answers will work; a
failure says exactly what went wrong, in the client's words, without echoing the API key.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import ZhixingError
from .capabilities import Capabilities, describe
from .prompts import Prompt

__all__ = ["ConnectionCheck", "Found", "check_connection"]


class Pong(BaseModel):
    """The reply to a connection check."""

    ok: bool = Field(description="Always true.")


_PING = Prompt(
    name="connection_check",
    system="You answer connection checks.",
    template='Reply with {{"ok": true}}. ({nonce})',
    schema=Pong,
    completion_tokens=lambda _: 5,
)


@dataclass(frozen=True)
class Found:
    """What one model's endpoint was found to do, and the structured-output method it gets."""

    model: str
    capabilities: Capabilities
    method: str  # json_schema, json_mode or function_calling: what the calls will use
    chosen: bool  # True when ZHIXING_STRUCTURED_OUTPUT is auto (the method was picked)

    @property
    def line(self) -> str:
        """The finding as one English line (the settings page words it in the user's language)."""
        how = f"auto uses {self.method}" if self.chosen else f"set to {self.method}"
        return f"{self.model}: {describe(self.capabilities)}; {how}"


@dataclass
class ConnectionCheck:
    ok: bool
    lines: list[str] = field(default_factory=list)  # one per model or embedding tried
    found: list[Found] = field(default_factory=list)  # one per model, what it can do


def check_connection(settings: Settings, *, timeout_s: float = 15.0) -> ConnectionCheck:
    """Try the chat model, the fast model (when different) and an OpenAI embedding model."""
    from .client import LLMClient

    if not settings.llm_configured:
        return ConnectionCheck(False, ["No endpoint is configured: Zhixing runs offline."])
    client = LLMClient(settings, None, timeout_s=timeout_s, max_attempts=1)
    result = ConnectionCheck(True)
    models = dict.fromkeys([settings.chat_model, settings.fast_model or settings.chat_model])
    for model in models:
        role = replace(_PING, fast=model != settings.chat_model)
        caps = client.capabilities(model, fresh=True)
        auto = settings.structured_output == "auto"
        result.found.append(Found(model, caps, client.method_for(model), auto))
        start = time.perf_counter()
        try:
            client.call(role, {"nonce": time.time_ns()})
        except ZhixingError as exc:
            result.ok = False
            result.lines.append(f"✗ {model} @ {client.shown_url}: {exc}")
            continue
        ms = (time.perf_counter() - start) * 1000
        result.lines.append(f"✓ {model} @ {client.shown_url}: replied in {ms:.0f} ms")
    if settings.embedding.startswith("openai:"):
        from .embeddings import OpenAIEmbedder

        name = settings.embedding.split(":", 1)[1]
        start = time.perf_counter()
        try:
            embedder = OpenAIEmbedder(settings, name, timeout_s=timeout_s, max_attempts=1)
            dimension = embedder.embed(["connection check"]).shape[1]
        except ZhixingError as exc:
            result.ok = False
            result.lines.append(f"✗ embedding {name}: {exc}")
        else:
            ms = (time.perf_counter() - start) * 1000
            result.lines.append(f"✓ embedding {name}: {dimension} dimensions in {ms:.0f} ms")
    return result
