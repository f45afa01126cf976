"""Access control of the knowledge service (docs/architecture.md §10): users, members, settings, audit.

A mixin of `KnowledgeService`: `actor` (core/auth.py User), `users` (UserStore), `settings`
and `kb(name)` (which checks visibility) are the service's. The role checks of the service's
other methods sit in those methods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .auth import User, authenticate, check_role, check_user_name, hash_password
from .config import Settings, load_saved, save_settings
from .errors import NotFoundError
from .models import KnowledgeBase
from .store.users import AuditEntry, StoredUser, UserStore

if TYPE_CHECKING:
    from .llm.check import ConnectionCheck

__all__ = ["AccessControl"]


class AccessControl:
    actor: User
    _users: UserStore
    settings: Settings
    kb: Callable[[str], KnowledgeBase]  # the service's: checks that the actor may see it

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

    def password_logins(self) -> bool:
        """Whether any user can sign in with a password."""
        return bool(self._users.count(with_password=True))

    # --- the actor's own choices ---------------------------------------------------------------

    def preference(self, key: str) -> str | None:
        """The acting user's saved choice for `key` (e.g. "language"), or None."""
        return self._users.preference(self.actor.name, key)

    def set_preference(self, key: str, value: str) -> None:
        """Save the acting user's choice for `key`; every user may keep their own."""
        self._users.set_preference(self.actor.name, key, value)

    # --- users and members -------------------------------------------------------------------

    def members(self, name: str) -> list[str]:
        """The users a knowledge base is restricted to; empty means every user sees it."""
        return self._users.members(self.kb(name).id)

    def restrict(self, name: str, users: Sequence[str]) -> list[str]:
        """Restrict a knowledge base to the named users (an empty list opens it to all)."""
        self.actor.require("admin", "change who may see a knowledge base")
        kb = self.kb(name)
        names = [check_user_name(u) for u in users if u.strip()]
        unknown = [u for u in names if self._users.get(u) is None]
        if unknown:
            raise NotFoundError(
                f"There is no user named {', '.join(map(repr, unknown))}; add one with "
                "`zhixing user add NAME --role viewer`."
            )
        self._users.set_members(kb.id, names)
        self._audit("kb.restrict", kb.name, members=names)
        return self._users.members(kb.id)

    def authorize(self, action: str, name: str | None = None) -> None:
        """Raise AccessError unless the actor may do `action` (read, build, admin) — on the
        knowledge base `name` when one is given. For callers that check before long work."""
        what = {"read": "read", "build": "build or change", "admin": "administer"}[action]
        self.actor.require(action, f"{what} knowledge bases")
        if name is not None:
            self.kb(name)

    def add_user(self, name: str, role: str, password: str | None) -> StoredUser:
        """Add a user or change one's role and password; `password=None` makes a user who
        signs in only through the identity provider (OIDC)."""
        self.actor.require("admin", "manage users")
        name, role = check_user_name(name), check_role(role)
        existed = self._users.get(name) is not None
        self._users.put(name, role, hash_password(password) if password is not None else "")
        self._audit("user.update" if existed else "user.add", name, role=role)
        user = self._users.get(name)
        assert user is not None
        return user

    def remove_user(self, name: str) -> None:
        self.actor.require("admin", "manage users")
        if not self._users.remove(name):
            raise NotFoundError(f"There is no user named {name!r}.")
        self._audit("user.remove", name)

    def list_users(self) -> list[StoredUser]:
        self.actor.require("admin", "manage users")
        return self._users.all()

    def save_settings(self, values: Mapping[str, str]) -> Settings:
        """Save the LLM and embedding settings of this home (they apply after a restart of
        the service); the audit log names the keys that changed, never their values."""
        self.actor.require("admin", "change settings")
        before = load_saved(self.settings.home)
        saved = save_settings(self.settings.home, values)
        after = load_saved(self.settings.home)
        changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        self._audit("settings.change", "settings", keys=changed)
        return saved

    def check_endpoint(self, candidate: Settings) -> ConnectionCheck:
        """Try the LLM endpoint of candidate settings before they are saved (core/llm/check)."""
        from .llm.check import check_connection

        self.actor.require("admin", "change settings")
        return check_connection(candidate)

    def audit_log(self, limit: int = 200) -> list[AuditEntry]:
        self.actor.require("admin", "read the audit log")
        return self._users.audit_log(limit)

    def _visible(self, kb: KnowledgeBase, restricted: Mapping[int, set[str]]) -> bool:
        members = restricted.get(kb.id)
        return not members or self.actor.role == "admin" or self.actor.name in members

    def _audit(self, action: str, target: str, **detail: Any) -> None:
        self._users.audit(self.actor.name, action, target, detail)
