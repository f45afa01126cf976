"""Every piece of UI text, in one package: one module per page, plus the shell's, each in
Chinese and English.

A module holds a class `ZH` with the Chinese text and a class `EN(ZH)` with the English (a
name EN does not override shows in Chinese, and a test checks there is none). The module's
`__getattr__` (PEP 562) answers `T.NAME` in the session's language, so pages import their
module (`from app.strings import build as T`), write `T.TITLE`, and never spell UI text inline.
The session's language is the user's own choice (the sidebar, saved per user), else the
deployment's `ZHIXING_LANGUAGE`, else the browser's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

__all__ = ["LANGUAGE_KEY", "LANGUAGE_NAMES", "current_language", "initial_language", "localized"]

LANGUAGE_KEY = "ui-language"  # session key: "zh" or "en"
LANGUAGE_NAMES = {"zh": "中文", "en": "English"}


def current_language() -> str:
    """The session's language; Chinese outside a session (the seed users are Chinese teams)."""
    try:
        value = st.session_state.get(LANGUAGE_KEY)
    except Exception:  # noqa: BLE001 - no script run context (a bare import, a test)
        value = None
    return value if value in LANGUAGE_NAMES else "zh"


def initial_language(configured: str, saved: str | None, locale: str | None) -> str:
    """A session's first language: the user's saved choice, else the deployment's setting,
    else the browser's (any Chinese locale is Chinese, any other English)."""
    if saved in LANGUAGE_NAMES:
        return str(saved)
    if configured in LANGUAGE_NAMES:
        return configured
    if locale:
        return "zh" if locale.lower().startswith("zh") else "en"
    return "zh"


def localized(zh: type, en: type) -> Callable[[str], Any]:
    """A strings module's `__getattr__`: each name in the session's language."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(en if current_language() == "en" else zh, name)

    return __getattr__
