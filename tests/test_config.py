from pathlib import Path

import pytest

from zhixing.core.config import Settings
from zhixing.core.errors import ConfigError


def test_defaults_are_offline_and_embedded():
    s = Settings.from_env({})
    assert s.home == Path("data")
    assert s.resolved_milvus_uri == str(Path("data") / "milvus.db")
    assert s.milvus_is_lite
    assert not s.llm_configured
    assert s.chat_model == "gpt-4o-mini" and s.fast_model == "gpt-4o-mini"
    assert s.embedding == "builtin" and s.llm_concurrency == 8
    assert s.structured_output == "auto"


def test_environment_variables_are_read():
    s = Settings.from_env(
        {
            "ZHIXING_HOME": "/srv/zx",
            "ZHIXING_MILVUS_URI": "http://milvus:19530",
            "ZHIXING_MILVUS_TOKEN": "root:Milvus",
            "OPENAI_BASE_URL": "http://vllm:8000/v1",
            "ZHIXING_CHAT_MODEL": "qwen2.5-72b",
            "ZHIXING_FAST_MODEL": "qwen2.5-7b",
            "ZHIXING_LLM_CONCURRENCY": "4",
            "ZHIXING_STRUCTURED_OUTPUT": "json_mode",
            "ZHIXING_EMBED_BATCH": "64",
        }
    )
    assert s.embed_batch == 64 and Settings.from_env({}).embed_batch == 256
    assert s.home == Path("/srv/zx") and s.catalog_path == Path("/srv/zx/catalog.db")
    assert not s.milvus_is_lite and s.milvus_token == "root:Milvus"
    assert s.llm_configured and s.fast_model == "qwen2.5-7b" and s.llm_concurrency == 4


def test_fast_model_defaults_to_the_chat_model():
    assert Settings.from_env({"ZHIXING_CHAT_MODEL": "deepseek-chat"}).fast_model == "deepseek-chat"


def test_secrets_never_appear_in_the_repr():
    s = Settings(openai_api_key="sk-secret", milvus_token="tok-secret")
    assert "sk-secret" not in repr(s) and "tok-secret" not in repr(s)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ZHIXING_LLM_CONCURRENCY": "many"}, "positive integer"),
        ({"ZHIXING_LLM_CONCURRENCY": "0"}, "positive integer"),
        ({"ZHIXING_EMBED_BATCH": "1e3"}, "ZHIXING_EMBED_BATCH is '1e3'; it must be a positive"),
        ({"ZHIXING_EMBED_BATCH": "-5"}, "ZHIXING_EMBED_BATCH must be a positive integer"),
        ({"ZHIXING_STRUCTURED_OUTPUT": "xml"}, "json_schema"),
        ({"ZHIXING_EMBEDDING": "bge"}, "openai:<model>"),
        ({"ZHIXING_LANGSMITH_TRACING": "maybe"}, "use true or false"),
        ({"ZHIXING_LANGSMITH_TRACING": "true"}, "set LANGSMITH_API_KEY"),
    ],
)
def test_bad_values_get_a_clear_error(env, message):
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(env)


def test_langsmith_tracing_is_off_unless_zhixing_is_told():
    # LangSmith's own switch, set for another project, does not turn it on here.
    assert not Settings.from_env(
        {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "k"}
    ).langsmith_tracing
    on = Settings.from_env(
        {
            "ZHIXING_LANGSMITH_TRACING": "Yes",
            "LANGSMITH_API_KEY": "k",
            "ZHIXING_LANGSMITH_PROJECT": "p",
        }
    )
    assert on.langsmith_tracing and on.langsmith_project == "p"
    assert (
        Settings.from_env(
            {"ZHIXING_LANGSMITH_TRACING": "on", "LANGSMITH_API_KEY": "k"}
        ).langsmith_project
        == "zhixing"
    )
