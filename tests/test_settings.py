"""Saved settings and the connection check, against the fake OpenAI server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings, load_saved, save_settings
from zhixing.core.errors import ConfigError
from zhixing.core.llm.check import check_connection


def test_saved_settings_apply_unless_the_environment_says_otherwise(tmp_path: Path) -> None:
    save_settings(tmp_path, {"ZHIXING_CHAT_MODEL": "qwen2.5", "OPENAI_API_KEY": "sk-secret"})
    assert (os.stat(tmp_path / "settings.json").st_mode & 0o777) == 0o600  # it holds the key
    settings = Settings.from_env({"ZHIXING_HOME": str(tmp_path)})
    assert settings.chat_model == "qwen2.5" and settings.openai_api_key == "sk-secret"
    env = {"ZHIXING_HOME": str(tmp_path), "ZHIXING_CHAT_MODEL": "from-env"}
    assert Settings.from_env(env).chat_model == "from-env"


def test_invalid_settings_are_refused_and_the_old_file_kept(tmp_path: Path) -> None:
    save_settings(tmp_path, {"ZHIXING_CHAT_MODEL": "good"})
    with pytest.raises(ConfigError, match="ZHIXING_STRUCTURED_OUTPUT"):
        save_settings(tmp_path, {"ZHIXING_STRUCTURED_OUTPUT": "xml"})
    assert load_saved(tmp_path) == {"ZHIXING_CHAT_MODEL": "good"}
    (tmp_path / "settings.json").write_text("not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="settings.json"):
        Settings.from_env({"ZHIXING_HOME": str(tmp_path)})


def test_unknown_keys_are_not_saved(tmp_path: Path) -> None:
    save_settings(tmp_path, {"ZHIXING_HOME": "/elsewhere", "ZHIXING_CHAT_MODEL": "m"})
    assert json.loads((tmp_path / "settings.json").read_text()) == {"ZHIXING_CHAT_MODEL": "m"}


def test_the_connection_check_reports_each_model() -> None:
    with FakeOpenAI() as fake:
        settings = Settings(
            openai_base_url=fake.url, openai_api_key="sk-x", chat_model="big", fast_model="small"
        )
        result = check_connection(settings)
    assert result.ok
    assert [line.split(" @ ")[0] for line in result.lines] == ["✓ big", "✓ small"]
    assert [b["model"] for b in fake.bodies()] == ["big", "small"]


def test_a_failed_connection_says_why_without_the_key() -> None:
    with FakeOpenAI() as fake:
        fake.fail("401")
        settings = Settings(openai_base_url=fake.url, openai_api_key="sk-very-secret")
        result = check_connection(settings, timeout_s=5)
    assert not result.ok
    assert "401" in result.lines[0] or "auth" in result.lines[0].lower()
    assert "sk-very-secret" not in " ".join(result.lines)


def test_an_unreachable_endpoint_fails_readably() -> None:
    with FakeOpenAI() as fake:
        url = fake.url
    result = check_connection(Settings(openai_base_url=url, openai_api_key="k"), timeout_s=3)
    assert not result.ok and "✗" in result.lines[0]
