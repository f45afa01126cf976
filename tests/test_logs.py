"""The logs' settings (core/logs.py): ZHIXING_LOG_LEVEL as their threshold, ZHIXING_LOG_FORMAT=json
as one object a line, and the API key removed in either format."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.command import zhixing
from zhixing.core.config import Settings
from zhixing.core.errors import ConfigError
from zhixing.core.logs import (
    close_debug_log,
    close_verbose_log,
    debug_log,
    log_path,
    verbose_log,
)

KEY = "sk-live-0123456789abcdef"


@pytest.fixture(autouse=True)
def zhixing_level() -> Iterator[None]:
    """A log's level is its logger's too: put the logger back for the tests after."""
    logger = logging.getLogger("zhixing")
    level = logger.level
    yield
    logger.setLevel(level)


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_json_lines_carry_time_level_logger_message_and_exception_without_the_key(
    tmp_path: Path,
) -> None:
    path = debug_log(tmp_path, as_json=True)
    assert path == log_path(tmp_path)
    log = logging.getLogger("zhixing.core.test")
    try:
        log.info("built %s with key %s", "知识库", KEY)
        try:
            raise RuntimeError(f"the endpoint said: bad key {KEY}")
        except RuntimeError:
            log.error("the build failed", exc_info=True)
    finally:
        close_debug_log(path)
    info, error = _records(path)
    assert set(info) == {"time", "level", "logger", "message", "exception"}
    assert info["level"] == "INFO" and info["logger"] == "zhixing.core.test"
    assert info["message"] == "built 知识库 with key sk-***" and info["exception"] is None
    assert str(info["time"]).endswith("+00:00")
    assert error["level"] == "ERROR" and error["message"] == "the build failed"
    exception = str(error["exception"])
    assert exception.startswith("Traceback") and "RuntimeError: the endpoint said" in exception
    assert KEY not in path.read_text(encoding="utf-8")


def test_the_level_drops_the_records_below_it_in_both_logs(tmp_path: Path) -> None:
    stream = io.StringIO()
    path = debug_log(tmp_path, level="WARNING")
    shown = verbose_log(stream, level="WARNING", as_json=True)
    log = logging.getLogger("zhixing.core.test")
    try:
        log.debug("a detail")
        log.info("a step")
        log.warning("a fallback")
    finally:
        close_debug_log(path)
        close_verbose_log(shown)
    written = path.read_text(encoding="utf-8")
    assert "a fallback" in written and "a step" not in written and "a detail" not in written
    (line,) = stream.getvalue().splitlines()
    assert json.loads(line)["message"] == "a fallback"


def test_the_settings_read_the_level_and_format_and_refuse_others() -> None:
    settings = Settings.from_env({"ZHIXING_LOG_LEVEL": "warning", "ZHIXING_LOG_FORMAT": "JSON"})
    assert (settings.log_level, settings.log_format) == ("WARNING", "json")
    assert (Settings.from_env({}).log_level, Settings.from_env({}).log_format) == ("", "text")
    with pytest.raises(ConfigError) as level:
        Settings.from_env({"ZHIXING_LOG_LEVEL": "loud"})
    assert str(level.value) == (
        "ZHIXING_LOG_LEVEL is 'LOUD'; use one of DEBUG, INFO, WARNING, ERROR."
    )
    with pytest.raises(ConfigError) as form:
        Settings.from_env({"ZHIXING_LOG_FORMAT": "yaml"})
    assert str(form.value) == "ZHIXING_LOG_FORMAT is 'yaml'; use one of text, json."


def test_the_command_writes_json_lines_at_the_level_it_is_given(tmp_path: Path) -> None:
    home = tmp_path / "home"
    json_env = {"ZHIXING_LOG_FORMAT": "json"}
    assert zhixing(home, "kb", "delete", "ghost", env=json_env).returncode == 1
    (failed,) = _records(log_path(home))  # the command's DEBUG record, with its traceback
    assert failed["level"] == "DEBUG" and failed["message"] == "zhixing kb delete failed"
    assert "NotFoundError" in str(failed["exception"])
    quiet = zhixing(home, "kb", "delete", "ghost", env={**json_env, "ZHIXING_LOG_LEVEL": "INFO"})
    assert quiet.returncode == 1
    assert len(_records(log_path(home))) == 1  # nothing below INFO was added


def test_a_bad_log_setting_stops_the_command_with_one_sentence(tmp_path: Path) -> None:
    ran = zhixing(tmp_path / "home", "kb", "list", env={"ZHIXING_LOG_FORMAT": "xml"})
    assert ran.returncode == 1
    assert ran.stderr == "zhixing: ZHIXING_LOG_FORMAT is 'xml'; use one of text, json.\n"
