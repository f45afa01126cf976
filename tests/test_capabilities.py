"""Capabilities probed, not assumed (issue 34, item 2): what an endpoint does is asked once per
process and model, `auto` picks the structured-output method from it, and test connection, the
Settings page and `zhixing -v` say what was found. Against tests/fake_openai.py made to refuse
json_schema, write tool calls as text, refuse streaming, or be down."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.command import zx
from tests.fake_openai import PROBE_HEADER, FakeOpenAI
from tests.pages import open_page, run
from zhixing.core.config import Settings
from zhixing.core.errors import LLMError
from zhixing.core.llm import PROMPTS, chunk_knowledge_variables
from zhixing.core.llm.check import check_connection
from zhixing.core.llm.client import LLMClient
from zhixing.core.llm.schemas import ChunkKnowledge
from zhixing.core.service import KnowledgeService

CHUNK = PROMPTS["chunk_knowledge"]
TEXT = "HSTS tells browsers to use HTTPS only.\nSet max-age to two years."
FAST = {"timeout_s": 5.0, "max_attempts": 2, "backoff_s": 0.01}
FIELDS = ("json_schema", "json_object", "tool_calls", "streaming")


def _settings(fake: FakeOpenAI, **more: object) -> Settings:
    return Settings(openai_base_url=fake.url, openai_api_key="sk-test-probe", **more)  # type: ignore[arg-type]


def _found(client: LLMClient) -> dict[str, object]:
    caps = client.capabilities()
    return {name: getattr(caps, name) for name in (*FIELDS, "slots")}


def test_auto_is_the_default_structured_output_and_the_fixed_ones_still_parse() -> None:
    assert Settings().structured_output == "auto"
    assert Settings.from_env({}).structured_output == "auto"
    for fixed in ("json_schema", "function_calling", "json_mode"):
        env = {"ZHIXING_STRUCTURED_OUTPUT": fixed}
        assert Settings.from_env(env).structured_output == fixed


def test_the_probe_header_is_the_one_the_fake_keeps_apart() -> None:
    from zhixing.core.llm.probe import PROBE_HEADER as SENT

    assert SENT == PROBE_HEADER


def test_an_endpoint_that_does_everything_is_found_to_do_everything_once_per_process() -> None:
    with FakeOpenAI(slots=2) as fake:
        client = LLMClient(_settings(fake))
        assert _found(client) == dict.fromkeys(FIELDS, True) | {"slots": 2}
        assert client.method == "json_schema"
        probes = fake.probes
        assert len(probes) == 4 and fake.chat_count == 0  # probes are not calls
        assert [p.get("max_tokens") for p in probes] == [32, 32, 64, 4]  # tiny, each of them
        assert sum(bool(p.get("stream")) for p in probes) == 1
        # Once per process and (base URL, model): a second client and many threads ask no more.
        other = LLMClient(_settings(fake))
        threads = [threading.Thread(target=other.capabilities) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        result = client.call(CHUNK, chunk_knowledge_variables(TEXT, mode="index"))
        assert isinstance(result, ChunkKnowledge)
        assert len(fake.probes) == 4
        assert fake.bodies()[-1]["response_format"]["type"] == "json_schema"


def test_many_threads_of_a_fresh_client_share_one_probe() -> None:
    with FakeOpenAI() as fake:
        client = LLMClient(_settings(fake))
        seen: list[object] = []
        threads = [
            threading.Thread(target=lambda: seen.append(client.capabilities())) for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(fake.probes) == 4 and len(set(map(id, seen))) == 1


def test_a_server_that_refuses_json_schema_gets_json_object_and_a_build_through_it_works(
    tmp_path: Path, embedder
) -> None:
    """…while a method fixed in the settings is used as it is, as before, with no probe."""
    doc = tmp_path / "hsts.md"
    doc.write_text(f"# HSTS\n\n{TEXT}\n", encoding="utf-8")
    with FakeOpenAI(refuse={"json_schema"}) as fake:
        client = LLMClient(_settings(fake))
        caps = client.capabilities()
        assert caps.json_schema is False and caps.reason("json_schema") == "refused"
        assert caps.json_object is True and caps.tool_calls is True
        assert client.method == "json_mode"
        settings = _settings(fake, home=tmp_path / "home")
        with KnowledgeService(settings, embedder=embedder, llm_options=FAST) as svc:
            svc.kbs.create("kb", mode="graph")
            report = svc.builds.add("kb", [doc])
            assert report.ok and report.degraded == 0, report.to_json()
            assert svc.graph.stats("kb").types  # entities came back through json_object
        sent = fake.bodies()
        assert sent and all(b["response_format"] == {"type": "json_object"} for b in sent)
        probes = len(fake.probes)
        fixed = LLMClient(_settings(fake, structured_output="json_schema"), max_attempts=1)
        with pytest.raises(LLMError, match="refused the structured-output request"):
            fixed.call(CHUNK, chunk_knowledge_variables(TEXT, mode="index"))
        tools = LLMClient(_settings(fake, structured_output="function_calling"))
        result = tools.call(CHUNK, chunk_knowledge_variables(TEXT, mode="index"))
        assert isinstance(result, ChunkKnowledge)
        assert "tools" in fake.bodies()[-1] and "response_format" not in fake.bodies()[-1]
        assert len(fake.probes) == probes == 4  # the fixed methods asked nothing


def test_tool_calls_written_as_text_are_found_to_be_no_tool_calls() -> None:
    with FakeOpenAI(tool_calls_as_text=True) as fake:
        client = LLMClient(_settings(fake))
        caps = client.capabilities()
        assert caps.tool_calls is False and caps.reason("tool_calls") == "as_text"
        assert caps.json_schema and caps.json_object and caps.streaming
        assert client.method == "json_schema"


@pytest.mark.parametrize(
    ("refuse", "as_text", "tool_calls", "method"),
    [
        ({"json_schema", "json_object"}, False, True, "function_calling"),
        # Nothing structured works: json_schema anyway, and the salvage path reads the text.
        ({"json_schema", "json_object"}, True, False, "json_schema"),
        ({"json_schema", "json_object", "tools"}, False, False, "json_schema"),
    ],
)
def test_auto_falls_back_to_function_calling_only_where_tool_calls_come_back(
    refuse: set[str], as_text: bool, tool_calls: bool, method: str
) -> None:
    with FakeOpenAI(refuse=refuse, tool_calls_as_text=as_text) as fake:
        client = LLMClient(_settings(fake))
        caps = client.capabilities()
        assert (caps.json_schema, caps.json_object, caps.tool_calls) == (False, False, tool_calls)
        assert client.method == method


def test_a_server_that_refuses_to_stream_is_found_not_to_stream() -> None:
    with FakeOpenAI(refuse={"stream"}) as fake:
        caps = LLMClient(_settings(fake)).capabilities()
        assert caps.streaming is False and caps.reason("streaming") == "refused"
        assert caps.json_schema is True


def test_an_unreachable_endpoint_is_unknown_not_incapable_and_a_later_probe_finds_the_truth() -> (
    None
):
    fake = FakeOpenAI(slots=1).start()
    fake.stop()  # the port is known, and refuses connections
    try:
        down = LLMClient(_settings(fake))
        caps = down.capabilities()
        assert _found(down) == dict.fromkeys((*FIELDS, "slots"))  # None: unknown, never False
        assert caps.reason("json_schema") == "unreachable" and not caps.known
        assert down.method == "json_schema"  # the default until something is known
        fake.start()  # back, on the same port
        assert _found(LLMClient(_settings(fake))) == dict.fromkeys(FIELDS, True) | {"slots": 1}
        assert down.capabilities(fresh=True).json_schema is True
    finally:
        fake.stop()


def test_the_connection_test_says_what_each_model_can_do() -> None:
    with FakeOpenAI(slots=1, tool_calls_as_text=True) as fake:
        result = check_connection(_settings(fake, chat_model="big"))
        assert result.ok and [line.split(" @ ")[0] for line in result.lines] == ["✓ big"]
        assert [found.line for found in result.found] == [
            "big: structured output: json_schema ✓, json_object ✓, tool calls ✗ (written as"
            " text), streaming ✓; serves 1 request at a time; auto uses json_schema"
        ]
    with FakeOpenAI(refuse={"json_schema"}) as fake:
        result = check_connection(_settings(fake, chat_model="big", fast_model="small"))
        assert [found.line.split(": ", 1)[0] for found in result.found] == ["big", "small"]
        assert all(found.line.endswith("auto uses json_mode") for found in result.found)
        assert "json_schema ✗ (refused)" in result.found[0].line
        assert "does not say how many requests it serves at once" in result.found[0].line
    with FakeOpenAI() as fake:
        url = fake.url
    result = check_connection(Settings(openai_base_url=url, openai_api_key="k"), timeout_s=3)
    assert not result.ok
    assert "json_schema ? (no answer)" in result.found[0].line


def _field(at, label_start: str):  # noqa: ANN001, ANN202 - an AppTest widget
    return next(w for w in at.text_input if w.label.startswith(label_start))


def test_the_settings_page_shows_what_the_connection_test_found_in_either_language(
    app_home,
) -> None:
    # json_object carries no schema: this "model" answers the check as the prompt asks.
    def pong(body: dict) -> dict:
        return {"ok": True}

    with FakeOpenAI(pong, slots=1, refuse={"json_schema"}, tool_calls_as_text=True) as fake:
        at = open_page("settings")
        structured = next(s for s in at.selectbox if "ZHIXING_STRUCTURED_OUTPUT" in s.label)
        assert structured.value == "auto" and "auto" in structured.options
        _field(at, "接口地址").input(fake.url)
        _field(at, "API 密钥").input("sk-test")
        at.button[0].click().run()  # 测试连接
        assert not at.exception, at.exception
        shown = at.success[0].value
        assert (
            "gpt-4o-mini：json_schema ✗ (被拒绝)，json_object ✓，工具调用 ✗ (调用被写成文本)"
            in shown
        )
        assert "流式输出 ✓；同时处理 1 个请求；auto 选用 json_mode" in shown
        at.selectbox(key="ui-language").set_value("en")
        run(at)
        _field(at, "Endpoint").input(fake.url)
        at.button[0].click().run()  # Test connection
        assert not at.exception, at.exception
        shown = at.success[0].value
        assert "json_schema ✗ (refused), json_object ✓, tool calls ✗ (written as text)" in shown
        assert "serves 1 request(s) at a time; auto uses json_mode" in shown


def test_zhixing_verbose_says_what_the_endpoint_was_found_to_do(tmp_path: Path) -> None:
    doc = tmp_path / "hsts.md"
    doc.write_text(f"# HSTS\n\n{TEXT}\n", encoding="utf-8")
    home = tmp_path / "home"
    with FakeOpenAI(slots=1, tool_calls_as_text=True) as fake:
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-test-verbose"}
        zx(home, "kb", "create", "kb", env=env)
        ran = zx(home, "-v", "add", "kb", str(doc), env=env)
    line = next(x for x in ran.stderr.splitlines() if "structured output:" in x)
    assert "json_schema ✓, json_object ✓, tool calls ✗ (written as text), streaming ✓" in line
    assert "serves 1 request at a time; auto uses json_schema" in line
    assert "sk-test-verbose" not in ran.stderr
