"""The login gate, driven by AppTest: nobody reaches a page before signing in, and each role
sees what it may do (core refuses the rest; see test_auth.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import MAIN, everything, go, open_page, run, sign_in
from zhixing.app.strings import build as B
from zhixing.app.strings import settings as S
from zhixing.app.strings import shell as T
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService, User


def _prepare(home: Path, embedder, users: dict[str, str]) -> None:
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        for name, role in users.items():
            svc.users.add(name, role, f"{name}-password")
        svc.kbs.create("policies")
        doc = home.parent / "policy.md"
        doc.write_text("# Policy\n\nPasswords are hashed.", encoding="utf-8")
        svc.builds.add("policies", [doc])


@pytest.fixture
def gated(app_home, monkeypatch):
    monkeypatch.setenv("ZHIXING_AUTH", "required")
    return app_home


def test_a_shared_server_without_users_says_how_to_add_one_and_shows_nothing(gated):
    at = open_page()
    assert at.error and "zhixing user add NAME --role admin" in at.error[0].value
    assert not at.text_input  # no login form: there is nobody to sign in as
    assert B.TITLE not in [t.value for t in at.title]


def test_signing_in_opens_the_pages_and_a_wrong_password_does_not(gated, embedder):
    _prepare(gated, embedder, {"ada": "admin"})
    at = open_page()
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]
    assert "policies" not in everything(at)  # not even the sidebar's list of knowledge bases
    sign_in(at, "ada", "wrong-password")
    assert at.error and "Wrong user name or password" in at.error[0].value
    assert B.TITLE not in [t.value for t in at.title]
    sign_in(at, "ada", "ada-password")
    assert B.TITLE in [t.value for t in at.title]
    assert T.SIGNED_IN.format(name="ada", role="admin") in [c.value for c in at.sidebar.caption]
    go(at, "settings")
    assert S.TITLE in [t.value for t in at.title]
    at.button(key="logout").click()
    run(at)
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]


def test_the_login_form_speaks_the_deployments_language_and_then_the_users_own(
    gated, embedder, monkeypatch
):
    monkeypatch.setenv("ZHIXING_LANGUAGE", "en")
    _prepare(gated, embedder, {"ada": "admin", "li": "admin"})
    with KnowledgeService(Settings(home=gated), embedder=embedder) as svc:
        svc.as_user(User("li", "admin")).users.set_preference("language", "zh")
    at = open_page()
    assert [t.value for t in at.title] == [T.EN.LOGIN_TITLE]
    sign_in(at, "li", "li-password")
    assert T.ZH.SIGNED_IN.format(name="li", role="admin") in [c.value for c in at.sidebar.caption]
    at.button(key="logout").click()
    run(at)
    assert [t.value for t in at.title] == [T.ZH.LOGIN_TITLE]  # the session keeps li's language
    sign_in(at, "ada", "ada-password")  # no choice of her own: the deployment's language
    assert T.EN.SIGNED_IN.format(name="ada", role="admin") in [c.value for c in at.sidebar.caption]


def test_failed_logins_are_rate_limited(gated, embedder):
    _prepare(gated, embedder, {"ada": "admin"})
    at = open_page()
    for _ in range(5):
        sign_in(at, "ada", "guess")
    sign_in(at, "ada", "ada-password")
    assert "Too many failed logins" in at.error[0].value
    assert B.TITLE not in [t.value for t in at.title]


def test_a_viewer_sees_no_build_controls_and_no_settings(gated, embedder):
    _prepare(gated, embedder, {"vera": "viewer"})
    at = open_page()
    sign_in(at, "vera", "vera-password")
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
    at = open_page()
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
    run(at)
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]
    assert at.button(key="login-oidc").label == T.LOGIN_OIDC_BUTTON
    assert not at.text_input  # no password form: the identity provider signs users in
    assert "policies" not in everything(at)


AUTH = {
    "redirect_uri": "http://kb.intranet:8501/oauth2callback",
    "cookie_secret": "a-long-random-secret",
    "client_id": "zhixing",
    "client_secret": "secret",
    "server_metadata_url": "http://idp.intranet/.well-known/openid-configuration",
}
ED, ADA = "ed@corp.example", "ada@corp.example"


@pytest.fixture
def sso(gated, embedder):
    """A shared server whose users sign in through the identity provider only (no passwords):
    ed is an editor, ada an admin; the knowledge base "secret" is for the two of them, "open"
    for everyone."""
    with KnowledgeService(Settings(home=gated), embedder=embedder) as svc:
        svc.users.add(ED, "editor", None)
        svc.users.add(ADA, "admin", None)
        svc.kbs.create("open")
        svc.kbs.create("secret")
        svc.kbs.restrict("secret", [ED, ADA])
    return gated


def _signed_in_as(email: str) -> AppTest:
    """The app after the identity provider signed in `email`: AppTest's `user` is the dict a
    run reads as `st.user` (what Streamlit fills in after `st.login`)."""
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.secrets["auth"] = AUTH
    at.user = {"is_logged_in": True, "email": email, "name": email.split("@")[0]}
    return run(at)


def _role_shown(at: AppTest) -> list[str]:
    return [c.value for c in at.sidebar.caption if c.value.startswith("已登录")]


def _build_controls(at: AppTest) -> set[str]:
    return {b.key for b in at.button} & {"create-submit", "add-submit"}


def test_an_identity_provider_login_gets_the_role_of_the_user_its_e_mail_names(sso):
    at = _signed_in_as(ED)
    assert B.TITLE in [t.value for t in at.title]
    assert _role_shown(at) == [T.SIGNED_IN.format(name=ED, role="editor")]
    assert _build_controls(at) == {"create-submit", "add-submit"}
    assert "secret" in everything(at)  # restricted to ed (and ada)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("../pages/settings.py")  # an editor is no admin
    at.button(key="logout").click()
    run(at)  # st.logout: the identity provider's session is gone
    assert [t.value for t in at.title] == [T.LOGIN_TITLE]
    assert at.button(key="login-oidc") and "secret" not in everything(at)

    at = _signed_in_as(ADA)
    assert _role_shown(at) == [T.SIGNED_IN.format(name=ADA, role="admin")]
    go(at, "settings")
    assert S.TITLE in [t.value for t in at.title]


def test_an_identity_no_user_names_is_a_viewer(sso):
    at = _signed_in_as("eve@corp.example")
    assert B.TITLE in [t.value for t in at.title]
    assert _role_shown(at) == [T.SIGNED_IN.format(name="eve@corp.example", role="viewer")]
    assert not _build_controls(at)
    assert T.READ_ONLY.format(role="viewer") in [c.value for c in at.caption]
    assert "secret" not in everything(at)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("../pages/settings.py")


def test_a_removed_user_loses_their_role_and_knowledge_at_the_next_click(sso):
    from zhixing.app.services import knowledge_service

    at = _signed_in_as(ED)
    assert _build_controls(at) and "secret" in everything(at)
    knowledge_service().users.remove(ED)  # as an admin would, while ed is signed in
    run(at)
    # Still signed in at the identity provider, but no user of Zhixing: a viewer like any other.
    assert _role_shown(at) == [T.SIGNED_IN.format(name=ED, role="viewer")]
    assert not _build_controls(at)
    assert "secret" not in everything(at)


def test_removing_the_only_member_of_a_knowledge_base_does_not_open_it_to_everyone(sso):
    from zhixing.app.services import knowledge_service

    knowledge_service().kbs.restrict("secret", [ED])
    assert "secret" not in everything(_signed_in_as("eve@corp.example"))
    knowledge_service().users.remove(ED)
    assert "secret" not in everything(_signed_in_as("eve@corp.example"))
