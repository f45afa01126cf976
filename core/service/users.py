"""Users and administration (docs/architecture.md §10): signing in (with a password, or with an
access token over MCP), each user's preferences, managing users, the home's
saved settings and the audit log. Who may see a knowledge base is
kbs.py's (`members`, `restrict`); the role checks of the other services sit in their methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..auth import (
    User,
    authenticate,
    check_role,
    check_user_name,
    hash_password,
    token_user,
)
from ..config import Settings, load_saved, save_settings
from ..errors import NotFoundError
from ..store.users import AuditEntry, StoredUser
from .access import Access

if TYPE_CHECKING:
    from ..llm.check import ConnectionCheck

__all__ = ["Admin", "Users"]


class Users:
    def __init__(self, access: Access) -> None:
        self._access, self._users = access, access.home.users

    # --- signing in (before there is an actor: the login gate's questions) ------------------

    def sign_in(self, name: str, password: str, *, client: str = "") -> User:
        """The built-in login: the user, or AccessError (throttled per client, core/auth.py)."""
        return authenticate(self._users, name, password, client=client)

    def session_user(self, name: str) -> User | None:
        """The signed-in user of a session as stored now (a changed role or a removed user
        takes effect at the next click); None when they can no longer sign in."""
        stored = self._users.get(name) if name else None
        if stored is None or not stored.password_hash:
            return None
        return User(stored.name, stored.role)

    def identity_user(self, identity: str, default_role: str) -> User:
        """A user the identity provider signed in: their stored role, or `default_role`."""
        stored = self._users.get(identity)
        return User(identity, stored.role if stored else check_role(default_role))

    def token_user(self, token: str) -> User | None:
        """The user an access token stands for, with their role as stored now; None when the
        token is unknown, revoked or expired, or its user was removed (core/auth.py)."""
        return token_user(self._users, token)

    def password_logins(self) -> bool:
        """Whether any user can sign in with a password."""
        return bool(self._users.count(with_password=True))

    # --- the actor's own choices ---------------------------------------------------------------

    def preference(self, key: str) -> str | None:
        """The acting user's saved choice for `key` (e.g. "language"), or None."""
        return self._users.preference(self._access.actor.name, key)

    def set_preference(self, key: str, value: str) -> None:
        """Save the acting user's choice for `key`; every user may keep their own."""
        self._users.set_preference(self._access.actor.name, key, value)

    # --- managing users (an admin's) -------------------------------------------------------

    def add(self, name: str, role: str, password: str | None) -> StoredUser:
        """Add a user or change one's role and password; `password=None` makes a user who
        signs in only through the identity provider (OIDC)."""
        self._access.actor.require("admin", "manage users")
        name, role = check_user_name(name), check_role(role)
        existed = self._users.get(name) is not None
        self._users.put(name, role, hash_password(password) if password is not None else "")
        self._access.audit("user.update" if existed else "user.add", name, role=role)
        user = self._users.get(name)
        assert user is not None
        return user

    def remove(self, name: str) -> None:
        self._access.actor.require("admin", "manage users")
        if not self._users.remove(name):
            raise NotFoundError(f"There is no user named {name!r}.")
        self._access.audit("user.remove", name)

    def all(self) -> list[StoredUser]:
        self._access.actor.require("admin", "manage users")
        return self._users.all()


class Admin:
    """The home's saved settings and its audit log (an admin's)."""

    def __init__(self, access: Access) -> None:
        self._access = access

    def save_settings(self, values: Mapping[str, str]) -> Settings:
        """Save the LLM and embedding settings of this home (they apply after a restart of
        the service); the audit log names the keys that changed, never their values."""
        self._access.actor.require("admin", "change settings")
        home = self._access.home.settings.home
        before = load_saved(home)
        saved = save_settings(home, values)
        after = load_saved(home)
        changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        self._access.audit("settings.change", "settings", keys=changed)
        return saved

    def check_endpoint(self, candidate: Settings) -> ConnectionCheck:
        """Try the LLM endpoint of candidate settings before they are saved (core/llm/check)."""
        from ..llm.check import check_connection

        self._access.actor.require("admin", "change settings")
        return check_connection(candidate)

    def audit_log(self, limit: int = 200) -> list[AuditEntry]:
        self._access.actor.require("admin", "read the audit log")
        return self._access.home.users.audit_log(limit)
