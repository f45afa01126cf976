"""The settings page, driven by AppTest, against the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.fake_openai import FakeOpenAI
from tests.pages import open_page
from zhixing.app.strings import settings as T
from zhixing.core.config import load_saved, save_settings


@pytest.fixture
def home(app_home):
    """The app's home; every build this test starts has ended before the service is closed."""
    from zhixing.app.background import build_jobs

    build_jobs.clear()
    yield app_home
    build_jobs().wait_all(120)
    build_jobs.clear()


def _field(at: AppTest, label_start: str):
    return next(w for w in at.text_input if w.label.startswith(label_start))


def test_saving_an_endpoint_switches_the_app_out_of_offline_mode(home):
    at = open_page("settings")
    assert "内置离线模式" in " ".join(c.value for c in at.sidebar.caption)
    _field(at, "接口地址").input("http://127.0.0.1:9/v1")
    _field(at, "API 密钥").input("sk-hidden-key")
    _field(at, "对话模型").input("qwen2.5-7b")
    at.button[1].click().run()  # 保存 Save
    assert not at.exception, at.exception
    assert load_saved(home)["OPENAI_API_KEY"] == "sk-hidden-key"
    assert any("已保存" in s.value for s in at.success)
    sidebar = " ".join(c.value for c in at.sidebar.caption).replace("\u2060", "")  # inert's joiner
    assert "qwen2.5-7b @ http://127.0.0.1:9/v1" in sidebar
    # The key is never echoed: not in any input's value, nor anywhere on the page.
    assert _field(at, "API 密钥").value == ""
    assert "sk-hidden-key" not in str([e for e in at.main]) + str([e for e in at.sidebar])


def test_test_connection_reports_success_and_the_exact_failure(home):
    with FakeOpenAI() as fake:
        at = open_page("settings")
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
    at = open_page("settings")
    _field(at, "向量模型").input("word2vec")
    at.button[1].click().run()
    assert not at.exception, at.exception
    assert at.error and "ZHIXING_EMBEDDING" in at.error[0].value
    assert load_saved(home) == {}


def _documents(folder: Path, word: str, n: int) -> list[Path]:
    """N one-chunk documents, each with a word of its own ("alpha3token")."""
    folder.mkdir()
    for i in range(n):
        text = f"# {word} {i}\n\nThe {word}{i}token control must be reviewed in release {i}.\n"
        (folder / f"{word}-{i}.md").write_text(text, encoding="utf-8")
    return sorted(folder.iterdir())


def _sidebar(at: AppTest) -> str:
    """The sidebar's captions as they read (without the word joiners `inert` puts in URLs)."""
    return " ".join(c.value for c in at.sidebar.caption).replace("\u2060", "")


@pytest.mark.slow
def test_saving_while_a_build_runs_saves_at_once_and_applies_to_the_next_build(home):
    from zhixing.app.background import build_jobs
    from zhixing.app.services import knowledge_service

    # One LLM call per chunk, one at a time, each 0.6 s: the first build runs for 6 s or more.
    with FakeOpenAI(latency_s=0.6) as before, FakeOpenAI() as after:
        save_settings(
            home,
            {
                "OPENAI_BASE_URL": before.url,
                "OPENAI_API_KEY": "sk-before",
                "ZHIXING_LLM_CONCURRENCY": "1",
            },
        )
        at = open_page("settings")
        first = knowledge_service()
        first.kbs.create("kb")
        job = build_jobs().start(
            first.builds, "kb", paths=_documents(home.parent / "a", "alpha", 10)
        )
        _field(at, "接口地址").input(after.url)
        _field(at, "API 密钥").input("sk-after")
        at.button[1].click().run()  # 保存 Save
        assert not at.exception, at.exception
        now = build_jobs().get(job.id)
        assert now.running, f"{now.state}: {now.error or 'it ended before the save; lengthen it'}"
        # Saved at once, and the page says when it applies; the build keeps its service.
        saved = load_saved(home)
        assert (saved["OPENAI_BASE_URL"], saved["OPENAI_API_KEY"]) == (after.url, "sk-after")
        assert [i.value for i in at.info] == [T.SAVED_PENDING] and not at.success
        assert knowledge_service() is first
        assert before.url in _sidebar(at) and after.url not in _sidebar(at)
        assert _field(at, "接口地址").value == after.url  # the form shows what was saved
        assert _field(at, "API 密钥").value == ""

        view = build_jobs().wait(job.id, 120)
        assert view.state == "done", view.error
        assert view.report.ok and len(view.report.added) == 10 and view.chunks == 10
        # It ended with the settings it started with: every call went to the old endpoint.
        assert before.chat_count >= 10 and after.chat_count == 0
        calls_before = before.chat_count

        # The last build to end closed the old service; the next one opens with the new settings.
        second = knowledge_service()
        assert second is not first
        assert second.settings.openai_base_url == after.url
        assert second.search.query("alpha7token", ["kb"])[0].document == "alpha-7.md"
        at.run()
        assert not at.exception, at.exception
        assert after.url in _sidebar(at) and before.url not in _sidebar(at)

        job = build_jobs().start(
            second.builds, "kb", paths=_documents(home.parent / "b", "beta", 2)
        )
        view = build_jobs().wait(job.id, 120)
        assert view.state == "done" and view.report.ok, view.error
        assert after.chat_count >= 2 and before.chat_count == calls_before
        assert [h.document for h in second.search.query("beta1token", ["kb"])][:1] == ["beta-1.md"]
        assert all(r["_auth"] == "Bearer sk-after" for r in after.bodies())
