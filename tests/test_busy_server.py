"""A busy server is not an outage (issue 34, item 4): a one-slot server that queues, a reply that
never stops streaming, a token limit on every call, and "cannot be reached" only when it cannot."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.errors import LLMError
from zhixing.core.llm import PROMPTS, ChunkKnowledge, LLMClient, chunk_knowledge_variables
from zhixing.core.llm.retry import EndpointUnreachableError
from zhixing.core.service import KnowledgeService

CHUNK = PROMPTS["chunk_knowledge"]
TEXT = "SQL Injection lets attackers run queries.\nUse Prepared Statements."


def _settings(fake: FakeOpenAI, **overrides: object) -> Settings:
    values: dict[str, object] = {"openai_base_url": fake.url, "openai_api_key": "sk-test-x"}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def _corpus(folder: Path, n: int) -> Path:
    path = folder / "corpus.jsonl"
    rows = [
        {"id": f"r{i}", "title": f"Rule {i}", "text": f"Rule {i}: Validate Input {i}."}
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_a_one_slot_server_at_the_default_concurrency_gets_no_request_twice(
    tmp_path, embedder
) -> None:
    # Six chunks of 0.3 s each queue for 1.8 s behind one slot: past a 1 s read timeout at the
    # default concurrency of 8, unless the client serves one at a time as /props says.
    with FakeOpenAI(latency_s=0.3, slots=1) as fake:
        settings = Settings(home=tmp_path / "home", openai_base_url=fake.url, embed_batch=32)
        assert settings.llm_concurrency == 8
        options = {"timeout_s": 1.0, "backoff_s": 0.01}
        with KnowledgeService(settings, embedder=embedder, llm_options=options) as svc:
            svc.kbs.create("kb", mode="graph")
            stages: list[str] = []
            report = svc.builds.add(
                "kb", [_corpus(tmp_path, 6)], on_event=lambda e: stages.append(e.stage)
            )
        bodies = [json.dumps(b, sort_keys=True) for b in fake.bodies()]
        assert len(set(bodies)) == len(bodies) == fake.generated  # nothing re-sent
        assert report.ok and report.degraded == 0 and report.chunks == 6, report.to_json()
        assert "paused" not in stages


def test_the_client_serves_as_many_requests_at_once_as_the_server_reports(tmp_path) -> None:
    with FakeOpenAI(slots=1) as fake:
        client = LLMClient(_settings(fake), timeout_s=2.0, backoff_s=0.01)
        client.call_many(CHUNK, [chunk_knowledge_variables(TEXT, mode="index")])
        assert client.concurrency.limit == 1
    with FakeOpenAI() as fake:  # no /props (vLLM, Ollama): the configured value stays
        client = LLMClient(_settings(fake, llm_concurrency=3), timeout_s=2.0)
        client.call_many(CHUNK, [chunk_knowledge_variables(TEXT, mode="index")])
        assert client.concurrency.limit == 3


def test_every_request_carries_a_token_limit(tmp_path) -> None:
    with FakeOpenAI() as fake:
        client = LLMClient(_settings(fake), timeout_s=2.0)
        client.call(CHUNK, chunk_knowledge_variables(TEXT, mode="graph"))
        client.call_streaming(CHUNK, chunk_knowledge_variables("Other text.", mode="graph"), print)
        client.invoke_tools(
            [{"role": "user", "content": "hi"}],
            [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}],
        )
        assert len(fake.bodies()) == 3
        assert all(b.get("max_tokens", 0) > 0 for b in fake.bodies()), fake.bodies()


def test_a_stream_that_never_ends_is_cut_at_its_deadline_and_read_as_cut() -> None:
    def endless(_body: dict) -> dict:
        question = {"question": "What does it say?", "line_start": 1, "line_end": 1}
        entity = {"name": "X", "type": "concept", "description": "x " * 20000, "attributes": {}}
        return {"questions": [question], "entities": [entity], "relations": []}

    # 40,000 characters in pieces of 8, 5 ms apart: 25 s of streaming without the deadline.
    with FakeOpenAI(endless, stream_piece=8, stream_delay_s=0.005) as fake:
        client = LLMClient(_settings(fake), timeout_s=0.5, min_tokens_per_s=10_000)
        started = time.monotonic()
        result = client.call_streaming(CHUNK, chunk_knowledge_variables(TEXT, mode="graph"), print)
        assert time.monotonic() - started < 6
        assert isinstance(result, ChunkKnowledge)
        stats = client.stats.snapshot()
        assert stats["salvaged"] + stats["repairs"] >= 1


def test_cannot_be_reached_means_refused_and_a_slow_server_is_only_busy() -> None:
    settings = Settings(openai_base_url="http://127.0.0.1:9/v1", openai_api_key="sk-test-x")
    with pytest.raises(EndpointUnreachableError):
        LLMClient(settings, max_attempts=2, backoff_s=0.01).call(
            CHUNK, chunk_knowledge_variables(TEXT, mode="index")
        )
    with FakeOpenAI(timeout_sleep_s=2.0) as fake:
        fake.fail("timeout", "timeout")
        client = LLMClient(_settings(fake), timeout_s=0.3, max_attempts=2, backoff_s=0.01)
        with pytest.raises(LLMError) as info:
            client.call(CHUNK, chunk_knowledge_variables(TEXT, mode="index"))
        assert not isinstance(info.value, EndpointUnreachableError)
        assert "busy" in str(info.value)
        assert (
            client.concurrency.limit < client.concurrency.ceiling or client.concurrency.limit == 1
        )


def test_a_build_whose_every_request_times_out_pauses_as_busy_never_as_unreachable(
    tmp_path, embedder
) -> None:
    state = {"slow": True}
    with FakeOpenAI(chaos=lambda _b: "timeout" if state["slow"] else None) as fake:
        fake.timeout_sleep_s = 1.0
        settings = Settings(home=tmp_path / "home", openai_base_url=fake.url, embed_batch=32)
        options = {"timeout_s": 0.3, "max_attempts": 2, "backoff_s": 0.01}
        paused: list[str] = []

        def on_event(event) -> None:
            if event.stage == "paused":
                paused.append(event.message)
                state["slow"] = False  # the server catches up while the build waits

        with KnowledgeService(settings, embedder=embedder, llm_options=options) as svc:
            svc.kbs.create("kb")
            report = svc.builds.add("kb", [_corpus(tmp_path, 3)], on_event=on_event)
        assert report.ok and report.degraded == 0, report.to_json()
        assert paused and all("is busy" in m and "cannot be reached" not in m for m in paused)
