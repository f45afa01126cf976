"""The UI text in two languages (app/strings): every name a page uses exists, English says
everything Chinese says and in English, and a user's choice of language changes the page and is
kept for their next session."""

from __future__ import annotations

import importlib
import pkgutil
import re
import shutil
from pathlib import Path

import pytest

import zhixing.app.strings
from tests.pages import open_page, run
from zhixing.app.strings import initial_language

ROOT = Path(__file__).resolve().parents[1]
HAN = re.compile(r"[\u3400-\u9fff]")
# Texts meant to be read by either language's speaker: the language picker's own label, the
# sample's fixed names, and examples that quote the (bilingual) sample documents.
BILINGUAL = {"shell.LANGUAGE"}
MODULES = sorted(m.name for m in pkgutil.iter_modules(zhixing.app.strings.__path__))


def _public(cls: type) -> dict[str, object]:
    return {k: v for k, v in vars(cls).items() if k.isupper()}


def _texts(value: object) -> list[str]:
    if isinstance(value, dict):
        return [str(v) for v in value.values()]
    if isinstance(value, tuple | list):
        return [str(v) for v in value]
    return [str(value)]


@pytest.mark.parametrize("name", MODULES)
def test_every_text_has_an_english_version_without_chinese_in_it(name: str) -> None:
    module = importlib.import_module(f"zhixing.app.strings.{name}")
    zh, en = module.ZH, module.EN
    assert issubclass(en, zh)
    for key, value in _public(zh).items():
        english = getattr(en, key)
        if f"{name}.{key}" in BILINGUAL:
            continue
        chinese = [t for t in _texts(english) if HAN.search(t)]
        assert not chinese, f"{name}.{key} has no English version: {chinese}"
        assert sorted(re.findall(r"{\w*", " ".join(_texts(value)))) == sorted(
            re.findall(r"{\w*", " ".join(_texts(english)))
        ), f"{name}.{key}: the two versions take different fields"


def test_every_name_the_pages_use_exists() -> None:
    used: list[tuple[str, str, str]] = []
    for path in [*ROOT.glob("app/*.py"), *ROOT.glob("pages/*.py")]:
        source = path.read_text(encoding="utf-8")
        for module, alias in re.findall(
            r"from zhixing\.app\.strings import (\w+) as (\w+)", source
        ):
            used += [(path.name, module, n) for n in re.findall(rf"\b{alias}\.([A-Z_]+)\b", source)]
    assert used
    missing = [
        f"{file}: {module}.{name}"
        for file, module, name in used
        if not hasattr(importlib.import_module(f"zhixing.app.strings.{module}").ZH, name)
    ]
    assert not missing


def test_the_first_language_is_the_users_then_the_deployments_then_the_browsers() -> None:
    assert initial_language("auto", None, "en-US") == "en"
    assert initial_language("auto", None, "zh-TW") == "zh"
    assert initial_language("auto", None, None) == "zh"
    assert initial_language("en", None, "zh-CN") == "en"
    assert initial_language("zh", "en", "zh-CN") == "en"
    assert initial_language("auto", "klingon", "en-GB") == "en"


@pytest.fixture
def home(sample_home, app_home):
    shutil.copytree(sample_home, app_home)
    return app_home


def test_a_user_who_picks_english_gets_english_pages_and_keeps_the_choice(home) -> None:
    at = open_page("recall")
    assert at.title[0].value == "召回笔记本"
    at.selectbox(key="ui-language").set_value("en")
    at = run(at)
    assert at.title[0].value == "Recall notebook"
    assert at.text_input(key="recall-query").label == "Question or keywords"
    again = open_page("recall")  # a new session of the same (local) user
    assert again.title[0].value == "Recall notebook"
