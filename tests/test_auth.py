"""Logins, roles and per-knowledge-base visibility, enforced in core (docs/architecture.md §10)."""

from __future__ import annotations

import sqlite3
import statistics
import time
from contextlib import closing

import pytest

from zhixing.core.auth import (
    ACCOUNT_MAX_FAILURES,
    FAILURE_WINDOW_S,
    LOCAL,
    MAX_FAILURES,
    TOKEN_USE_EVERY_S,
    LoginThrottledError,
    User,
    authenticate,
    hash_password,
    is_loopback,
    issue_token,
    revoke_token,
    token_user,
    verify_password,
)
from zhixing.core.errors import AccessError, ConfigError, NotFoundError
from zhixing.core.store.catalog import Catalog
from zhixing.core.store.users import UserStore

VIEWER, EDITOR, ADMIN = User("vera", "viewer"), User("ed", "editor"), User("ada", "admin")


def _write(folder, name: str, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def shared(service, tmp_path):
    """A home with users, an open knowledge base and one restricted to `ed`."""
    for user in (VIEWER, EDITOR, ADMIN):
        service.users.add(user.name, user.role, f"{user.name}-password")
    service.kbs.create("open")
    service.builds.add(
        "open", [_write(tmp_path / "o", "firewall.md", "# Firewall\n\nDeny by default.")]
    )
    service.kbs.create("secret")
    service.builds.add(
        "secret", [_write(tmp_path / "s", "salary.md", "# Salaries\n\nThe firewall budget.")]
    )
    service.kbs.restrict("secret", ["ed"])
    return service


def test_passwords_are_stored_as_salted_scrypt_hashes_only(shared):
    stored = shared._home.users.get("vera")
    assert stored.password_hash.startswith("scrypt$16384$8$1$")
    assert verify_password("vera-password", stored.password_hash)
    assert not verify_password("vera-passwore", stored.password_hash)
    assert not verify_password("vera-password", "scrypt$garbage")
    assert hash_password("same-password") != hash_password("same-password")  # salted
    shared._home.catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert b"vera-password" not in shared.settings.catalog_path.read_bytes()
    with pytest.raises(ConfigError, match="too short"):
        shared.users.add("short", "viewer", "1234")
    with pytest.raises(ConfigError, match="not a role"):
        shared.users.add("x", "root", "long-enough")


def test_a_token_signs_in_as_its_user_with_the_role_stored_now_until_it_expires(service):
    service.users.add("vera", "viewer", None)
    users = service._home.users  # the store the CLI's token commands use
    token, stored = issue_token(users, "vera", 2, by="local", now=1000.0)
    assert token.startswith("zx_") and len(token) > 40
    assert stored.expires_at == 1000.0 + 2 * 86400 and token not in str(users.tokens())
    assert token_user(users, token, now=1001.0) == User("vera", "viewer")
    assert service.users.token_user(token) is None  # issued "at 1000": long expired now
    assert token_user(users, token, now=stored.expires_at) is None
    assert token_user(users, token[:-1] + "x", now=1001.0) is None
    service.users.add("vera", "editor", None)  # a changed role applies at the next request
    assert token_user(users, token, now=1001.0) == User("vera", "editor")
    revoke_token(users, stored.id, by="local")
    assert token_user(users, token, now=1001.0) is None
    fresh, _ = issue_token(users, "vera", 1, by="local")
    assert service.users.token_user(fresh) == User("vera", "editor")
    service.users.remove("vera")
    assert service.users.token_user(fresh) is None
    with pytest.raises(NotFoundError, match="no user named 'ghost'"):
        issue_token(users, "ghost", 1, by="local")
    with pytest.raises(ConfigError, match="1 to 3650 days"):
        issue_token(users, "vera", 0, by="local")
    actions = [e.action for e in service.admin.audit_log()]
    assert actions.count("token.create") == 2 and "token.revoke" in actions


def test_a_token_keeps_its_label_and_when_it_last_signed_in_to_the_minute(service):
    service.users.add("vera", "viewer", None)
    users = service._home.users
    token, stored = issue_token(users, "vera", 2, by="local", label="  Claude Code ", now=1000.0)
    assert stored.label == "Claude Code" and stored.last_used_at is None
    assert token_user(users, token, now=1010.0) == User("vera", "viewer")
    assert users.tokens(token_id=stored.id)[0].last_used_at == 1010.0
    # Within the minute a request writes nothing; after it, the new time.
    assert token_user(users, token, now=1010.0 + TOKEN_USE_EVERY_S - 1) is not None
    assert users.tokens(token_id=stored.id)[0].last_used_at == 1010.0
    assert token_user(users, token, now=1010.0 + TOKEN_USE_EVERY_S) is not None
    assert users.tokens(token_id=stored.id)[0].last_used_at == 1010.0 + TOKEN_USE_EVERY_S
    # A token that signs nobody in is no use of it.
    users.put("vera", "viewer", "")
    revoke_token(users, stored.id, by="local")
    assert token_user(users, token, now=5000.0) is None
    for bad in ("x" * 65, "two\nlines"):
        with pytest.raises(ConfigError, match="one line of at most 64 characters"):
            issue_token(users, "vera", 1, by="local", label=bad)
    assert users.tokens() == []  # a refused label makes no token


def test_an_older_home_gains_token_labels_and_uses_and_keeps_its_tokens(tmp_path):
    path = tmp_path / "catalog.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(
            "CREATE TABLE tokens (id INTEGER PRIMARY KEY AUTOINCREMENT, user_name TEXT NOT NULL,"
            " digest TEXT NOT NULL UNIQUE, created_at REAL NOT NULL, expires_at REAL NOT NULL);"
            "INSERT INTO tokens (user_name, digest, created_at, expires_at)"
            " VALUES ('vera', 'd', 1.0, 2.0);"
        )
    catalog = Catalog(path)
    try:
        users = UserStore(catalog.db)
        [old] = users.tokens()
        assert (old.user, old.digest, old.label, old.last_used_at) == ("vera", "d", "", None)
        users.token_used(old.id, 1.5)
        assert users.token("d") is not None and users.token("d").last_used_at == 1.5
        UserStore(catalog.db)  # opened again: nothing left to add
    finally:
        catalog.close()


def test_login_checks_the_password_and_rate_limits_failures(shared):
    assert authenticate(shared._home.users, "vera", "vera-password", client="10.0.0.5") == VIEWER
    for _ in range(5):
        with pytest.raises(AccessError, match="Wrong user name or password"):
            authenticate(shared._home.users, "vera", "wrong", client="10.0.0.5")
    # The sixth try from that client is refused before the password is even checked, the right
    # one included.
    with pytest.raises(LoginThrottledError, match="Too many failed logins"):
        authenticate(shared._home.users, "vera", "vera-password", client="10.0.0.5")
    # Once the window has passed, the right password works again.
    later = shared._home.users.failures_since(0, name="vera")[-1] + FAILURE_WINDOW_S + 1
    again = authenticate(shared._home.users, "vera", "vera-password", client="10.0.0.5", now=later)
    assert again == VIEWER
    # A client trying many names is throttled too; an unknown name fails like a wrong password.
    for i in range(5):
        with pytest.raises(AccessError, match="Wrong user name or password"):
            authenticate(shared._home.users, f"nobody{i}", "x", client="10.0.0.9")
    with pytest.raises(LoginThrottledError):
        authenticate(shared._home.users, "ed", "ed-password", client="10.0.0.9")
    actions = [e.action for e in shared._home.users.audit_log()]
    assert actions.count("login") == 2 and actions.count("login.failed") == 10


def test_failing_a_password_locks_that_name_for_that_client_only(shared):
    """Anyone may fail vera's password on purpose: vera still signs in from her own machine."""
    for _ in range(MAX_FAILURES):
        with pytest.raises(AccessError, match="Wrong user name or password"):
            authenticate(shared._home.users, "vera", "guess", client="10.6.6.6")
    with pytest.raises(LoginThrottledError):
        authenticate(shared._home.users, "vera", "vera-password", client="10.6.6.6")
    assert authenticate(shared._home.users, "vera", "vera-password", client="10.0.0.5") == VIEWER
    # Her sign-in forgets her own failures only: the guessing client stays locked out.
    with pytest.raises(LoginThrottledError):
        authenticate(shared._home.users, "vera", "guess", client="10.6.6.6")


def test_guessing_one_name_from_many_clients_meets_a_ceiling(shared):
    for i in range(ACCOUNT_MAX_FAILURES - 1):
        shared._home.users.record_failure("vera", f"10.1.{i // 200}.{i % 200}")
    assert authenticate(shared._home.users, "vera", "vera-password", client="10.0.0.5") == VIEWER
    shared._home.users.record_failure("vera", "10.2.0.1")
    with pytest.raises(LoginThrottledError, match="Too many failed logins"):
        authenticate(shared._home.users, "vera", "vera-password", client="10.0.0.5")
    assert authenticate(shared._home.users, "ed", "ed-password", client="10.0.0.5") == EDITOR


def test_a_failed_login_takes_as_long_whether_or_not_the_name_has_a_password(shared):
    """No timing oracle: a name that is unknown, or signs in through OIDC only (no password
    hash), fails in about the time of a wrong password."""
    shared.users.add("olga", "viewer", None)
    assert shared._home.users.get("olga").password_hash == ""
    times: dict[str, list[float]] = {"vera": [], "olga": [], "nobody": []}
    for attempt in range(3):
        for index, (name, spent) in enumerate(times.items()):
            client = f"10.3.{attempt}.{index}"  # a new client each time: no throttle in the way
            started = time.perf_counter()
            with pytest.raises(AccessError, match="Wrong user name or password"):
                authenticate(shared._home.users, name, "wrong-password", client=client)
            spent.append(time.perf_counter() - started)
    wrong_password = statistics.median(times["vera"])
    # scrypt dominates: in one run, on one machine, the three must be alike (a ratio, not a time).
    assert statistics.median(times["olga"]) >= wrong_password / 3
    assert statistics.median(times["nobody"]) >= wrong_password / 3


def test_a_viewer_may_read_but_not_change_anything(shared, tmp_path):
    viewer = shared.as_user(VIEWER)
    assert [kb.name for kb in viewer.kbs.all()] == ["open"]
    assert viewer.search.query("firewall", ["open"])
    assert viewer.kbs.documents("open")[0].source == "firewall.md"
    assert viewer.search.ask(
        "What does the firewall deny by default?", ["open"], max_rounds=1
    ).answer.found
    doc = _write(tmp_path / "v", "new.md", "# New\n\ntext")
    for action in (
        lambda: viewer.kbs.create("mine"),
        lambda: viewer.builds.add("open", [doc]),
        lambda: viewer.builds.remove("open", "firewall.md"),
        lambda: viewer.kbs.delete("open"),
        lambda: viewer.admin.save_settings({"ZHIXING_CHAT_MODEL": "x"}),
        lambda: viewer.users.add("mallory", "admin", "mallory-password"),
        lambda: viewer.kbs.restrict("open", ["vera"]),
        lambda: viewer.admin.audit_log(),
    ):
        with pytest.raises(AccessError, match="vera \\(viewer\\) may not"):
            action()
    assert [d.source for d in shared.kbs.documents("open")] == ["firewall.md"]
    assert shared._home.users.get("mallory") is None


def test_an_editor_builds_but_only_an_admin_deletes_settings_and_users(shared, tmp_path):
    editor = shared.as_user(EDITOR)
    editor.kbs.create("team")
    editor.builds.add("team", [_write(tmp_path / "e", "a.md", "# A\n\nAlpha.")])
    editor.builds.remove("team", "a.md")
    editor.builds.add("team", [_write(tmp_path / "e", "b.md", "# B\n\nBeta.")])
    with pytest.raises(AccessError, match="needs the admin role"):
        editor.kbs.delete("team")
    editor.kbs.create("oops")
    editor.kbs.delete("oops")  # an editor may undo a create: no documents yet
    for action in (
        lambda: editor.admin.save_settings({"ZHIXING_CHAT_MODEL": "x"}),
        lambda: editor.users.add("x", "viewer", "x-password"),
        lambda: editor.admin.audit_log(),
    ):
        with pytest.raises(AccessError):
            action()
    admin = shared.as_user(ADMIN)
    admin.kbs.delete("team")
    admin.admin.save_settings({"ZHIXING_CHAT_MODEL": "qwen2.5"})
    log = admin.admin.audit_log()
    seen = [(e.user, e.action, e.target) for e in reversed(log)]
    for entry in [
        ("ed", "kb.create", "team"),
        ("ed", "documents.add", "team"),
        ("ed", "documents.remove", "team"),
        ("ed", "kb.delete", "oops"),
        ("ada", "kb.delete", "team"),
        ("ada", "settings.change", "settings"),
    ]:
        assert entry in seen
    settings_entry = next(e for e in log if e.action == "settings.change")
    assert settings_entry.detail == {"keys": ["ZHIXING_CHAT_MODEL"]}  # names, never values
    added = next(e for e in log if e.action == "documents.add" and e.target == "team")
    assert added.detail["files"] == ["b.md"] and added.detail["added"] == 1


def test_a_restricted_knowledge_base_is_invisible_to_non_members(shared):
    viewer, member = shared.as_user(VIEWER), shared.as_user(EDITOR)
    with pytest.raises(NotFoundError, match="no knowledge base named 'secret' that vera may see"):
        viewer.search.query("salaries", ["secret"])
    for action in (
        lambda: viewer.kbs.documents("secret"),
        lambda: viewer.graph.stats("secret"),
        lambda: viewer.search.ask("budget?", ["secret"]),
    ):
        with pytest.raises(NotFoundError, match=r"\(known: open\)"):
            action()
    # "All knowledge bases" means all the ones this user may see.
    assert {h.document for h in viewer.search.query("firewall", None, top_k=20)} == {"firewall.md"}
    assert {h.document for h in member.search.query("firewall", None, top_k=20)} == {
        "firewall.md",
        "salary.md",
    }
    assert {kb.name for kb in shared.as_user(ADMIN).kbs.all()} == {"open", "secret"}
    assert shared.kbs.members("secret") == ["ed"]
    with pytest.raises(NotFoundError, match="no user named 'nobody'"):
        shared.kbs.restrict("secret", ["nobody"])
    shared.kbs.restrict("secret", [])
    assert {kb.name for kb in viewer.kbs.all()} == {"open", "secret"}


def test_the_local_operator_is_an_admin_and_loopback_is_recognized():
    assert LOCAL.can("admin") and LOCAL.local
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20")
    assert not is_loopback("kb.intranet")
