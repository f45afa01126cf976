"""The settings page, driven by AppTest, against the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.config import load_saved
from tests.fake_openai import FakeOpenAI

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")


@pytest.fixture
def home(app_home):
    return app_home


def _settings_page() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page("../pages/settings.py").run()
    assert not at.exception, at.exception
    return at


def _field(at: AppTest, label_start: str):
    return next(w for w in at.text_input if w.label.startswith(label_start))


def test_saving_an_endpoint_switches_the_app_out_of_offline_mode(home):
    at = _settings_page()
    assert "内置离线模式" in " ".join(c.value for c in at.sidebar.caption)
    _field(at, "接口地址").input("http://127.0.0.1:9/v1")
    _field(at, "API 密钥").input("sk-hidden-key")
    _field(at, "对话模型").input("qwen2.5-7b")
    at.button[1].click().run()  # 保存 Save
    assert not at.exception, at.exception
    assert load_saved(home)["OPENAI_API_KEY"] == "sk-hidden-key"
    assert any("已保存" in s.value for s in at.success)
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "qwen2.5-7b @ http://127.0.0.1:9/v1" in sidebar
    # The key is never echoed: not in any input's value, nor anywhere on the page.
    assert _field(at, "API 密钥").value == ""
    assert "sk-hidden-key" not in str([e for e in at.main]) + str([e for e in at.sidebar])


def test_test_connection_reports_success_and_the_exact_failure(home):
    with FakeOpenAI() as fake:
        at = _settings_page()
        _field(at, "接口地址").input(fake.url)
        _field(at, "API 密钥").input("sk-test")
        at.button[0].click().run()  # 测试连接
        assert not at.exception, at.exception
        assert at.success and "✓ gpt-4o-mini" in at.success[0].value
        fake.fail("401")
        at.button[0].click().run()
        assert at.error and "HTTP 401" in at.error[0].value
        assert "sk-test" not in at.error[0].value


def test_an_invalid_embedding_is_refused_with_a_sentence(home):
    at = _settings_page()
    _field(at, "向量模型").input("word2vec")
    at.button[1].click().run()
    assert not at.exception, at.exception
    assert at.error and "ZHIXING_EMBEDDING" in at.error[0].value
    assert load_saved(home) == {}
