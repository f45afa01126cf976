"""The account page, driven by AppTest: a signed-in user makes an MCP access token for
themself (shown once, with the client configuration that uses it), lists and revokes their own,
and sees no one else's; an admin sees and revokes everyone's. The tokens are checked against
the home's catalog as `zhixing mcp --http` checks a request's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import everything, go, open_page, run, sign_in
from zhixing.core.auth import token_user
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService, User
from zhixing.core.store.catalog import Catalog
from zhixing.core.store.users import UserStore

PEOPLE = {"alice": "viewer", "bob": "viewer", "ada": "admin"}


@pytest.fixture
def served(app_home: Path, monkeypatch: pytest.MonkeyPatch, embedder) -> Iterator[str]:  # noqa: ANN001
    """A home that requires logins, with two viewers and an admin, and bob's token (returned)."""
    monkeypatch.setenv("ZHIXING_AUTH", "required")
    with KnowledgeService(Settings(home=app_home), embedder=embedder) as svc:
        for name, role in PEOPLE.items():
            svc.users.add(name, role, f"{name}-password")
        bobs = svc.as_user(User("bob", "viewer")).tokens.create("bob's laptop").token
    yield bobs  # the app opens the home only once the test's service has closed it


def _who(home: Path, token: str) -> User | None:
    """Whom `token` signs in as, read from the catalog as `zhixing mcp --http` reads it."""
    with closing(Catalog(home / "catalog.db")) as catalog:
        return token_user(UserStore(catalog.db), token)


def _shown(at: AppTest) -> str:
    """The text of the page's titles, headers, captions and messages."""
    kinds = (at.title, at.subheader, at.caption, at.info, at.success, at.error)
    return " ".join(str(e.value) for kind in kinds for e in kind)


def _account(name: str) -> AppTest:
    return go(sign_in(open_page(), name, f"{name}-password"), "account")


def _listed(at: AppTest) -> list[tuple[str, str]]:
    """The tokens the page lists: (user, name) of each."""
    if not at.dataframe:
        return []
    table = at.dataframe[0].value
    return list(zip(table.iloc[:, 1], table.iloc[:, 2], strict=True))


def _create(at: AppTest, label: str, days: int = 30) -> AppTest:
    at.text_input(key="token-label").input(label)
    at.number_input(key="token-days").set_value(days)
    at.button(key="FormSubmitter:token-create-创建令牌").click()
    return run(at)


def _revoke(at: AppTest, token_id: int) -> AppTest:
    at.selectbox(key="token-id").set_value(token_id)
    at.button(key="FormSubmitter:token-revoke-撤销").click()
    return run(at)


def test_a_viewer_makes_a_token_shown_once_with_its_client_configuration(served, app_home):
    at = _account("alice")
    assert at.title[0].value == "账户" and "已登录：alice（viewer）" in _shown(at)
    assert _listed(at) == []  # bob's token is not hers to see
    at = _create(at, "Claude Code")
    token = at.code[0].value
    assert token.startswith("zx_") and _who(app_home, token) == User("alice", "viewer")
    assert "只显示这一次" in at.success[0].value
    config = json.loads(at.code[1].value)
    assert config == {
        "mcpServers": {
            "zhixing": {
                "type": "http",
                "url": "http://127.0.0.1:8502/mcp",
                "headers": {"Authorization": f"Bearer {token}"},
            }
        }
    }
    assert _listed(at) == [("alice", "Claude Code")]
    # Shown once: the next run of the page (any click) shows it no more.
    at = run(at)
    assert token not in everything(at) and not at.code
    assert _listed(at) == [("alice", "Claude Code")]


def test_a_viewer_revokes_her_own_token_and_is_offered_no_one_elses(served, app_home):
    bobs = served
    at = _create(_account("alice"), "old laptop")
    token = at.code[0].value
    offered = at.selectbox(key="token-id").options
    assert len(offered) == 1 and "old laptop" in offered[0] and "bob" not in offered[0]
    at = _revoke(at, int(offered[0].split(" · ")[0]))
    assert "已撤销" in at.success[0].value
    assert _who(app_home, token) is None and _listed(at) == []
    assert "还没有令牌" in _shown(at)
    assert _who(app_home, bobs) == User("bob", "viewer")  # bob's untouched


def test_an_admin_sees_and_revokes_everyones_tokens(served, app_home):
    bobs = served
    alice = _create(_account("alice"), "ide")
    at = _account("ada")
    assert "所有用户的令牌" in _shown(at)
    assert _listed(at) == [("bob", "bob's laptop"), ("alice", "ide")]
    bob_id = int(at.dataframe[0].value.iloc[0, 0])
    at = _revoke(at, bob_id)
    assert "令牌" in at.success[0].value and "bob" in at.success[0].value
    assert _who(app_home, bobs) is None and _listed(at) == [("alice", "ide")]
    assert _who(app_home, alice.code[0].value) == User("alice", "viewer")


def test_without_logins_the_local_admin_lists_tokens_but_makes_none_for_itself(app_home, embedder):
    with KnowledgeService(Settings(home=app_home), embedder=embedder) as svc:
        svc.users.add("alice", "viewer", None)
        svc.as_user(User("alice", "viewer")).tokens.create("ide")
    at = go(open_page(), "account")
    assert "本机访问，未登录" in _shown(at)
    assert any("本机访问（未登录）时无法为自己创建" in i.value for i in at.info)
    assert not [t for t in at.text_input if t.key == "token-label"]
    assert _listed(at) == [("alice", "ide")]
