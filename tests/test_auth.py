"""Logins, roles and per-knowledge-base visibility, enforced in core (docs/architecture.md §10)."""

from __future__ import annotations

import statistics
import time

import pytest

from zhixing.core.auth import (
    ACCOUNT_MAX_FAILURES,
    FAILURE_WINDOW_S,
    LOCAL,
    MAX_FAILURES,
    LoginThrottledError,
    User,
    authenticate,
    hash_password,
    is_loopback,
    verify_password,
)
from zhixing.core.errors import AccessError, ConfigError, NotFoundError

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
        service.add_user(user.name, user.role, f"{user.name}-password")
    service.create_kb("open")
    service.add("open", [_write(tmp_path / "o", "firewall.md", "# Firewall\n\nDeny by default.")])
    service.create_kb("secret")
    service.add(
        "secret", [_write(tmp_path / "s", "salary.md", "# Salaries\n\nThe firewall budget.")]
    )
    service.restrict("secret", ["ed"])
    return service


def test_passwords_are_stored_as_salted_scrypt_hashes_only(shared):
    stored = shared._users.get("vera")
    assert stored.password_hash.startswith("scrypt$16384$8$1$")
    assert verify_password("vera-password", stored.password_hash)
    assert not verify_password("vera-passwore", stored.password_hash)
    assert not verify_password("vera-password", "scrypt$garbage")
    assert hash_password("same-password") != hash_password("same-password")  # salted
    shared._catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert b"vera-password" not in shared.settings.catalog_path.read_bytes()
    with pytest.raises(ConfigError, match="too short"):
        shared.add_user("short", "viewer", "1234")
    with pytest.raises(ConfigError, match="not a role"):
        shared.add_user("x", "root", "long-enough")


def test_login_checks_the_password_and_rate_limits_failures(shared):
    assert authenticate(shared._users, "vera", "vera-password", client="10.0.0.5") == VIEWER
    for _ in range(5):
        with pytest.raises(AccessError, match="Wrong user name or password"):
            authenticate(shared._users, "vera", "wrong", client="10.0.0.5")
    # The sixth try from that client is refused before the password is even checked, the right
    # one included.
    with pytest.raises(LoginThrottledError, match="Too many failed logins"):
        authenticate(shared._users, "vera", "vera-password", client="10.0.0.5")
    # Once the window has passed, the right password works again.
    later = shared._users.failures_since(0, name="vera")[-1] + FAILURE_WINDOW_S + 1
    again = authenticate(shared._users, "vera", "vera-password", client="10.0.0.5", now=later)
    assert again == VIEWER
    # A client trying many names is throttled too; an unknown name fails like a wrong password.
    for i in range(5):
        with pytest.raises(AccessError, match="Wrong user name or password"):
            authenticate(shared._users, f"nobody{i}", "x", client="10.0.0.9")
    with pytest.raises(LoginThrottledError):
        authenticate(shared._users, "ed", "ed-password", client="10.0.0.9")
    actions = [e.action for e in shared._users.audit_log()]
    assert actions.count("login") == 2 and actions.count("login.failed") == 10


def test_failing_a_password_locks_that_name_for_that_client_only(shared):
    """Anyone may fail vera's password on purpose: vera still signs in from her own machine."""
    for _ in range(MAX_FAILURES):
        with pytest.raises(AccessError, match="Wrong user name or password"):
            authenticate(shared._users, "vera", "guess", client="10.6.6.6")
    with pytest.raises(LoginThrottledError):
        authenticate(shared._users, "vera", "vera-password", client="10.6.6.6")
    assert authenticate(shared._users, "vera", "vera-password", client="10.0.0.5") == VIEWER
    # Her sign-in forgets her own failures only: the guessing client stays locked out.
    with pytest.raises(LoginThrottledError):
        authenticate(shared._users, "vera", "guess", client="10.6.6.6")


def test_guessing_one_name_from_many_clients_meets_a_ceiling(shared):
    for i in range(ACCOUNT_MAX_FAILURES - 1):
        shared._users.record_failure("vera", f"10.1.{i // 200}.{i % 200}")
    assert authenticate(shared._users, "vera", "vera-password", client="10.0.0.5") == VIEWER
    shared._users.record_failure("vera", "10.2.0.1")
    with pytest.raises(LoginThrottledError, match="Too many failed logins"):
        authenticate(shared._users, "vera", "vera-password", client="10.0.0.5")
    assert authenticate(shared._users, "ed", "ed-password", client="10.0.0.5") == EDITOR


def test_a_failed_login_takes_as_long_whether_or_not_the_name_has_a_password(shared):
    """No timing oracle: a name that is unknown, or signs in through OIDC only (no password
    hash), fails in about the time of a wrong password."""
    shared.add_user("olga", "viewer", None)
    assert shared._users.get("olga").password_hash == ""
    times: dict[str, list[float]] = {"vera": [], "olga": [], "nobody": []}
    for attempt in range(3):
        for index, (name, spent) in enumerate(times.items()):
            client = f"10.3.{attempt}.{index}"  # a new client each time: no throttle in the way
            started = time.perf_counter()
            with pytest.raises(AccessError, match="Wrong user name or password"):
                authenticate(shared._users, name, "wrong-password", client=client)
            spent.append(time.perf_counter() - started)
    wrong_password = statistics.median(times["vera"])
    # scrypt dominates: in one run, on one machine, the three must be alike (a ratio, not a time).
    assert statistics.median(times["olga"]) >= wrong_password / 3
    assert statistics.median(times["nobody"]) >= wrong_password / 3


def test_a_viewer_may_read_but_not_change_anything(shared, tmp_path):
    viewer = shared.as_user(VIEWER)
    assert [kb.name for kb in viewer.list_kbs()] == ["open"]
    assert viewer.search("firewall", ["open"])
    assert viewer.documents("open")[0].source == "firewall.md"
    assert viewer.ask(
        "What does the firewall deny by default?", ["open"], max_rounds=1
    ).answer.found
    doc = _write(tmp_path / "v", "new.md", "# New\n\ntext")
    for action in (
        lambda: viewer.create_kb("mine"),
        lambda: viewer.add("open", [doc]),
        lambda: viewer.remove("open", "firewall.md"),
        lambda: viewer.delete_kb("open"),
        lambda: viewer.save_settings({"ZHIXING_CHAT_MODEL": "x"}),
        lambda: viewer.add_user("mallory", "admin", "mallory-password"),
        lambda: viewer.restrict("open", ["vera"]),
        lambda: viewer.audit_log(),
    ):
        with pytest.raises(AccessError, match="vera \\(viewer\\) may not"):
            action()
    assert [d.source for d in shared.documents("open")] == ["firewall.md"]
    assert shared._users.get("mallory") is None


def test_an_editor_builds_but_only_an_admin_deletes_settings_and_users(shared, tmp_path):
    editor = shared.as_user(EDITOR)
    editor.create_kb("team")
    editor.add("team", [_write(tmp_path / "e", "a.md", "# A\n\nAlpha.")])
    editor.remove("team", "a.md")
    editor.add("team", [_write(tmp_path / "e", "b.md", "# B\n\nBeta.")])
    with pytest.raises(AccessError, match="needs the admin role"):
        editor.delete_kb("team")
    editor.create_kb("oops")
    editor.delete_kb("oops")  # an editor may undo a create: no documents yet
    for action in (
        lambda: editor.save_settings({"ZHIXING_CHAT_MODEL": "x"}),
        lambda: editor.add_user("x", "viewer", "x-password"),
        lambda: editor.audit_log(),
    ):
        with pytest.raises(AccessError):
            action()
    admin = shared.as_user(ADMIN)
    admin.delete_kb("team")
    admin.save_settings({"ZHIXING_CHAT_MODEL": "qwen2.5"})
    log = admin.audit_log()
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
        viewer.search("salaries", ["secret"])
    for action in (
        lambda: viewer.documents("secret"),
        lambda: viewer.graph_stats("secret"),
        lambda: viewer.ask("budget?", ["secret"]),
    ):
        with pytest.raises(NotFoundError, match=r"\(known: open\)"):
            action()
    # "All knowledge bases" means all the ones this user may see.
    assert {h.document for h in viewer.search("firewall", None, top_k=20)} == {"firewall.md"}
    assert {h.document for h in member.search("firewall", None, top_k=20)} == {
        "firewall.md",
        "salary.md",
    }
    assert {kb.name for kb in shared.as_user(ADMIN).list_kbs()} == {"open", "secret"}
    assert shared.members("secret") == ["ed"]
    with pytest.raises(NotFoundError, match="no user named 'nobody'"):
        shared.restrict("secret", ["nobody"])
    shared.restrict("secret", [])
    assert {kb.name for kb in viewer.list_kbs()} == {"open", "secret"}


def test_the_local_operator_is_an_admin_and_loopback_is_recognized():
    assert LOCAL.can("admin") and LOCAL.local
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20")
    assert not is_loopback("kb.intranet")
