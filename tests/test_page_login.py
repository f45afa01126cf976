"""The login gate, driven by AppTest: nobody reaches a page before signing in, and each role
sees what it may do (core refuses the rest; see test_auth.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.strings import build as B
from app.strings import settings as S
from app.strings import shell as T
from core.config import Settings
from core.service import KnowledgeService

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")


def _prepare(home: Path, embedder, users: dict[str, str]) -> None:
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        for name, role in users.items():
            svc.add_user(name, role, f"{name}-password")
        svc.create_kb("policies")
        doc = home.parent / "policy.md"
        doc.write_text("# Policy\n\nPasswords are hashed.", encoding="utf-8")
        svc.add("policies", [doc])


@pytest.fixture
def gated(app_home, monkeypatch):
    monkeypatch.setenv("ZHIXING_AUTH", "required")
    return app_home


def _run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def _sign_in(at: AppTest, name: str, password: str) -> AppTest:
    at.text_input(key="login-name").input(name)
    at.text_input(key="login-password").input(password)
    at.button[0].click()
    return _run(at)


def _everything(at: AppTest) -> str:
    return str(list(at.main)) + str(list(at.sidebar))


def test_a_shared_server_without_users_says_how_to_add_one_and_shows_nothing(gated):
    at = _run(AppTest.from_file(MAIN, default_timeout=120))
    assert at.error and "zhixing user add NAME --role admin" in at.error[0].value
    assert not at.text_input  # no login form: there is nobody to sign in as
    assert B.TITLE not in [t.value for t in at.title]


def test_signing_in_opens_the_pages_and_a_wrong_password_does_not(gated, embedder):
    _prepare(gated, embedder, {"ada": "admin"})
    at = _run(AppTest.from_file(MAIN, default_timeout=120))
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]
    assert "policies" not in _everything(at)  # not even the sidebar's list of knowledge bases
    _sign_in(at, "ada", "wrong-password")
    assert at.error and "Wrong user name or password" in at.error[0].value
    assert B.TITLE not in [t.value for t in at.title]
    _sign_in(at, "ada", "ada-password")
    assert B.TITLE in [t.value for t in at.title]
    assert T.SIGNED_IN.format(name="ada", role="admin") in [c.value for c in at.sidebar.caption]
    at.switch_page("../pages/settings.py")
    _run(at)
    assert S.TITLE in [t.value for t in at.title]
    at.button(key="logout").click()
    _run(at)
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]


def test_failed_logins_are_rate_limited(gated, embedder):
    _prepare(gated, embedder, {"ada": "admin"})
    at = _run(AppTest.from_file(MAIN, default_timeout=120))
    for _ in range(5):
        _sign_in(at, "ada", "guess")
    _sign_in(at, "ada", "ada-password")
    assert "Too many failed logins" in at.error[0].value
    assert B.TITLE not in [t.value for t in at.title]


def test_a_viewer_sees_no_build_controls_and_no_settings(gated, embedder):
    _prepare(gated, embedder, {"vera": "viewer"})
    at = _run(AppTest.from_file(MAIN, default_timeout=120))
    _sign_in(at, "vera", "vera-password")
    assert B.TITLE in [t.value for t in at.title]
    keys = {b.key for b in at.button}
    assert "create-submit" not in keys and "add-submit" not in keys
    assert "delete-submit" not in keys and "remove-submit" not in keys
    assert T.READ_ONLY.format(role="viewer") in [c.value for c in at.caption]
    # Settings is not a page of a viewer's app at all (and core refuses it: test_auth.py).
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("../pages/settings.py")


def test_localhost_needs_no_login(app_home, embedder):
    _prepare(app_home, embedder, {"ada": "admin"})
    at = _run(AppTest.from_file(MAIN, default_timeout=120))
    assert B.TITLE in [t.value for t in at.title]
    assert not any(c.value.startswith("已登录") for c in at.sidebar.caption)


def test_with_oidc_configured_the_gate_offers_single_sign_on(gated, embedder):
    _prepare(gated, embedder, {"ada": "admin"})
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.secrets["auth"] = {
        "redirect_uri": "http://kb.intranet:8501/oauth2callback",
        "cookie_secret": "a-long-random-secret",
        "client_id": "zhixing",
        "client_secret": "secret",
        "server_metadata_url": "http://idp.intranet/.well-known/openid-configuration",
    }
    _run(at)
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]
    assert at.button(key="login-oidc").label == T.LOGIN_OIDC_BUTTON
    assert not at.text_input  # no password form: the identity provider signs users in
    assert "policies" not in _everything(at)
