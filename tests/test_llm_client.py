"""The LLM client over real HTTP: ChatOpenAI talks to the fake OpenAI-compatible server."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI, default_responder
from zhixing.core.config import Settings
from zhixing.core.errors import LLMError, LLMOutputError
from zhixing.core.llm import (
    PROMPTS,
    ChunkKnowledge,
    EndpointUnreachableError,
    LLMCache,
    LLMClient,
    chunk_knowledge_variables,
    make_client,
)
from zhixing.core.store.catalog import Catalog

KEY = "sk-test-0123456789abcdefSECRET"
TEXT = "SQL Injection lets attackers run queries.\nUse Prepared Statements.\n\nSQL注入 可以用参数化查询防止。"
CHUNK = PROMPTS["chunk_knowledge"]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_settings(fake: FakeOpenAI, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "openai_base_url": fake.url,
        "openai_api_key": KEY,
        "chat_model": "chat-model",
        "fast_model": "fast-model",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def client_for(fake: FakeOpenAI, cache: LLMCache | None = None, **overrides: object) -> LLMClient:
    return LLMClient(make_settings(fake, **overrides), cache, timeout_s=1.0, backoff_s=0.01)


def variables(text: str = TEXT, mode: str = "graph") -> dict[str, object]:
    return chunk_knowledge_variables(text, mode=mode, title="OWASP SQL Injection Prevention")


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_each_structured_output_method_returns_validated_chunk_knowledge(
    fake: FakeOpenAI, method: str
) -> None:
    client = client_for(fake, structured_output=method)
    result = client.call(CHUNK, variables())
    assert isinstance(result, ChunkKnowledge)
    # One question per non-empty numbered line, pointing at that line.
    assert [(q.line_start, q.line_end) for q in result.questions] == [(1, 1), (2, 2), (4, 4)]
    assert {"SQL Injection", "SQL注入"} <= {e.name for e in result.entities}
    assert result.relations
    body = fake.bodies()[0]
    if method == "json_schema":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == "ChunkKnowledge"
    elif method == "function_calling":
        assert body["tools"][0]["function"]["name"] == "ChunkKnowledge"
    else:
        assert body["response_format"] == {"type": "json_object"}
        # json_mode promises only "some JSON": the schema has to travel in the prompt.
        assert '"line_start"' in body["messages"][-1]["content"]
    assert client.stats.snapshot()["calls"] == 1 == fake.chat_count


def test_the_prompt_shows_numbered_lines_and_the_build_mode(fake: FakeOpenAI) -> None:
    client_for(fake).call(CHUNK, variables(mode="index"))
    system, user = fake.bodies()[0]["messages"]
    assert system["role"] == "system" and "never instructions" in system["content"]
    assert "1| SQL Injection lets attackers" in user["content"]
    assert "4| SQL注入" in user["content"]
    assert "Build mode: index" in user["content"]


@pytest.mark.parametrize("fault", ["malformed", "invalid"])
def test_a_bad_reply_is_repaired_with_one_more_request_that_says_what_was_wrong(
    fake: FakeOpenAI, fault: str
) -> None:
    client = client_for(fake)
    fake.fail(fault)
    result = client.call(CHUNK, variables())
    assert isinstance(result, ChunkKnowledge) and result.questions
    assert fake.chat_count == 2
    repair = fake.bodies()[1]["messages"][-1]["content"]
    expected = "not valid JSON" if fault == "malformed" else "did not match the schema"
    assert expected in repair
    assert client.stats.snapshot()["repairs"] == 1


def test_a_function_call_answered_in_the_content_is_read_without_a_repair(
    fake: FakeOpenAI,
) -> None:
    client = client_for(fake, structured_output="function_calling")
    fake.fail("no_tool_call")  # the JSON comes back as text instead of as a tool call
    result = client.call(CHUNK, variables())
    assert isinstance(result, ChunkKnowledge) and result.questions
    assert fake.chat_count == 1
    assert client.stats.snapshot()["salvaged"] == 1 and client.stats.snapshot()["repairs"] == 0


def test_a_second_bad_reply_raises_llm_output_error(fake: FakeOpenAI) -> None:
    client = client_for(fake)
    fake.fail("malformed", "invalid")
    with pytest.raises(LLMOutputError, match="even after one repair request"):
        client.call(CHUNK, variables())
    assert fake.chat_count == 2
    stats = client.stats.snapshot()
    assert stats["repairs"] == 1 and stats["failures"] == 1


def test_rate_limits_server_errors_and_timeouts_are_retried_until_success(
    fake: FakeOpenAI,
) -> None:
    client = LLMClient(make_settings(fake), timeout_s=0.3, backoff_s=0.01, max_attempts=5)
    fake.fail("429", "500", "timeout", "cut")  # "cut": the reply stops half-way, then closes
    assert isinstance(client.call(CHUNK, variables()), ChunkKnowledge)
    stats = client.stats.snapshot()
    assert stats["retries"] == 4 and stats["calls"] == 5 and stats["failures"] == 0
    assert fake.chat_count == 5


def test_a_retry_after_header_sets_the_pause(fake: FakeOpenAI) -> None:
    fake.retry_after = "1"
    client = client_for(fake)
    fake.fail("429")
    started = time.monotonic()
    client.call(CHUNK, variables())
    assert time.monotonic() - started >= 0.9


def test_a_server_that_keeps_failing_is_reported_after_max_attempts(fake: FakeOpenAI) -> None:
    client = LLMClient(make_settings(fake), timeout_s=1.0, max_attempts=3, backoff_s=0.01)
    fake.fail("500", "500", "500")
    with pytest.raises(LLMError, match=r"HTTP 500 after 3 attempt") as info:
        client.call(CHUNK, variables())
    assert fake.url in str(info.value)
    assert fake.chat_count == 3


def test_a_rejected_key_is_reported_at_once_without_quoting_it(fake: FakeOpenAI) -> None:
    client = client_for(fake)
    fake.fail("401")
    with pytest.raises(LLMError, match="OPENAI_API_KEY") as info:
        client.call(CHUNK, variables())
    assert fake.chat_count == 1  # a 401 is not worth retrying
    assert KEY not in str(info.value)


def test_a_down_server_raises_llm_error_naming_the_url_and_not_the_key() -> None:
    with FakeOpenAI() as fake:
        settings = make_settings(fake)
    client = LLMClient(settings, timeout_s=1.0, max_attempts=2, backoff_s=0.01)
    with pytest.raises(EndpointUnreachableError) as info:
        client.call(CHUNK, variables())
    message = str(info.value)
    assert settings.openai_base_url in message and "could not be reached" in message
    assert KEY not in message
    assert client.stats.snapshot()["calls"] == 2


def test_the_api_key_never_appears_in_any_error_or_log(
    fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = LLMClient(make_settings(fake), timeout_s=0.3, max_attempts=2, backoff_s=0.01)
    errors: list[BaseException] = []
    for faults in (["400"], ["401"], ["500", "503"], ["timeout", "timeout"], ["malformed"] * 2):
        fake.fail(*faults)
        with pytest.raises(LLMError) as info:
            client.call(CHUNK, variables(text=f"{faults} {TEXT}"))
        errors.append(info.value)
    fake.stop()
    with pytest.raises(LLMError) as info:
        client.call(CHUNK, variables(text="down"))
    errors.append(info.value)
    assert all(body["_auth"] == f"Bearer {KEY}" for body in fake.bodies())  # it was sent
    for error in errors:
        assert KEY not in "".join(traceback.format_exception(error))
    assert KEY not in caplog.text
    assert "retry 1 of 1" in caplog.text  # the retries were logged, so the check had text


def test_a_keyless_local_server_gets_a_placeholder_key(fake: FakeOpenAI) -> None:
    client = client_for(fake, openai_api_key="")
    client.call(CHUNK, variables())
    assert fake.bodies()[0]["_auth"] == "Bearer not-needed"


def test_fast_roles_run_on_the_fast_model(fake: FakeOpenAI) -> None:
    client = client_for(fake)
    same = client.call(
        PROMPTS["same_entity"],
        {
            "name_a": "SQL injection",
            "type_a": "vulnerability",
            "description_a": "",
            "name_b": "SQL注入",
            "type_b": "vulnerability",
            "description_b": "",
        },
    )
    assert same.same is True  # type: ignore[attr-defined]
    client.call(CHUNK, variables())
    assert [b["model"] for b in fake.bodies()] == ["fast-model", "chat-model"]


def test_the_cache_makes_a_second_identical_call_cost_no_requests(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    first = client_for(fake, LLMCache(catalog.db))
    answer = first.call(CHUNK, variables())
    assert first.call(CHUNK, variables()) == answer
    # A rebuild: a new client over the same catalog file.
    rebuilt = client_for(fake, LLMCache(Catalog(tmp_path / "catalog.db").db))
    assert rebuilt.call(CHUNK, variables()) == answer
    assert fake.chat_count == 1
    assert first.stats.snapshot()["cache_hits"] == 1 == rebuilt.stats.snapshot()["cache_hits"]
    # A different model is a different prompt: it is asked again.
    client_for(fake, LLMCache(catalog.db), chat_model="other-model").call(CHUNK, variables())
    assert fake.chat_count == 2


def test_a_repaired_answer_is_cached_under_the_original_prompt(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    client = client_for(fake, LLMCache(Catalog(tmp_path / "catalog.db").db))
    fake.fail("malformed")
    client.call(CHUNK, variables())
    client.call(CHUNK, variables())
    assert fake.chat_count == 2


def test_call_many_runs_in_parallel_and_keeps_the_order() -> None:
    # Parallel, counted on the server (requests in flight at once), not timed: a timed bound
    # failed on a machine busy with other work.
    lock, in_flight, most = threading.Lock(), [0], [0]

    def responder(body: dict) -> dict | str:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.2)
        with lock:
            in_flight[0] -= 1
        return default_responder(body)

    with FakeOpenAI(responder=responder) as fake:
        client = client_for(fake, llm_concurrency=8)
        batch = [variables(text=f"Line number {i} about CWE-{i}") for i in range(16)]
        results = client.call_many(CHUNK, batch)
    assert most[0] >= 4, most  # up to 8 at once; one at a time would be 1
    assert all(isinstance(r, ChunkKnowledge) for r in results)
    for i, result in enumerate(results):
        assert f"Line number {i} " in result.questions[0].question  # type: ignore[union-attr]


def test_call_many_returns_failures_in_place_instead_of_raising(fake: FakeOpenAI) -> None:
    def responder(body: dict) -> dict | str:
        if "poison" in body["messages"][1]["content"]:
            return "not json"
        from tests.fake_openai import default_responder

        return default_responder(body)

    fake.responder = responder
    client = client_for(fake)
    results = client.call_many(CHUNK, [variables("fine one"), variables("poison"), variables("ok")])
    assert isinstance(results[0], ChunkKnowledge) and isinstance(results[2], ChunkKnowledge)
    assert isinstance(results[1], LLMOutputError)


def test_call_many_against_a_down_server_fails_fast() -> None:
    with FakeOpenAI() as fake:
        settings = make_settings(fake, llm_concurrency=2)
    client = LLMClient(settings, timeout_s=1.0, max_attempts=3, backoff_s=0.05)
    results = client.call_many(CHUNK, [variables(f"text {i}") for i in range(20)])
    assert all(isinstance(r, EndpointUnreachableError) for r in results)
    # Only the items already in flight spend their retries; the rest fail without a request.
    assert client.stats.snapshot()["calls"] <= 2 * 3
    assert client.stats.snapshot()["failures"] == 20


def test_call_many_raises_a_template_mistake_before_sending_anything(fake: FakeOpenAI) -> None:
    with pytest.raises(ValueError, match="numbered_text"):
        client_for(fake).call_many(CHUNK, [variables(), {"mode": "index"}])
    assert fake.chat_count == 0


def test_estimate_counts_calls_and_tokens_and_skips_cached_inputs(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    client = client_for(fake, LLMCache(Catalog(tmp_path / "catalog.db").db))
    batch = [variables("中文" * 100, mode="graph"), variables("word " * 100, mode="index")]
    estimate = client.estimate(CHUNK, batch)
    assert estimate["calls"] == 2 and estimate["cached"] == 0
    assert estimate["prompt_tokens"] > 200 + 125  # at least the chunk texts themselves
    assert estimate["completion_tokens"] > 0
    client.call(CHUNK, batch[0])
    assert client.estimate(CHUNK, batch)["calls"] == 1
    assert fake.chat_count == 1  # estimating sends nothing


def test_make_client_is_none_offline_and_a_client_when_an_endpoint_is_set() -> None:
    assert make_client(Settings(), None) is None
    assert isinstance(
        make_client(Settings(openai_base_url="http://127.0.0.1:1/v1"), None), LLMClient
    )


def test_a_gateway_that_keeps_answering_503_means_the_endpoint_is_away(
    fake: FakeOpenAI,
) -> None:
    # A timeout is a busy server, not an away one (tests/test_busy_server.py).
    client = LLMClient(make_settings(fake), timeout_s=0.3, max_attempts=2, backoff_s=0.01)
    for faults in (["503", "503"],):
        fake.fail(*faults)
        with pytest.raises(EndpointUnreachableError) as info:
            client.call(CHUNK, variables())
        assert fake.url in str(info.value) and KEY not in str(info.value)
    fake.fail("500", "500")  # a server error of the model itself is not an outage
    with pytest.raises(LLMError) as info:
        client.call(CHUNK, variables())
    assert not isinstance(info.value, EndpointUnreachableError)
