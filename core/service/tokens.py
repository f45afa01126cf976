"""Access tokens for `zhixing mcp --http` (docs/architecture.md §10), as the app offers them:
a signed-in user makes tokens that sign in as themself, lists and revokes their own; an admin
lists and revokes everyone's. Whose tokens an actor may see is the access policy's (access.py
`tokens`, `token`); core/auth.py makes, checks and revokes them and writes the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..auth import issue_token, revoke_token
from ..errors import AccessError
from ..store.users import StoredToken
from .access import Access

__all__ = ["DEFAULT_TOKEN_DAYS", "IssuedToken", "Tokens"]

DEFAULT_TOKEN_DAYS = 90  # as `zhixing token create`


@dataclass(frozen=True)
class IssuedToken:
    """A token just made: `token` is shown once and kept nowhere; `stored` is what stays."""

    token: str
    stored: StoredToken


class Tokens:
    def __init__(self, access: Access) -> None:
        self._access = access

    def create(self, label: str = "", days: int = DEFAULT_TOKEN_DAYS) -> IssuedToken:
        """Make a token that signs in as the acting user, with their role as it is at each
        request; any stored user may make their own."""
        actor = self._access.actor
        if actor.local:
            raise AccessError(
                "A token signs in as a stored user, and the local operator is none; sign in as"
                " a user, or make one for a user with `zhixing token create NAME`."
            )
        token, stored = issue_token(
            self._access.home.users, actor.name, days, by=actor.name, label=label
        )
        return IssuedToken(token, stored)

    def all(self) -> list[StoredToken]:
        """The tokens the actor may see, oldest first (access.py `tokens`)."""
        return self._access.tokens()

    def revoke(self, token_id: int) -> StoredToken:
        """Revoke a token the actor may see, at once: the next request with it is refused."""
        self._access.token(token_id)
        return revoke_token(self._access.home.users, token_id, by=self._access.actor.name)
