"""The one access policy of the knowledge service (docs/architecture.md §10).

An `Access` is one actor over one home: which knowledge bases the actor may see (a base
restricted to members is invisible to everyone else, as if it did not exist), whose access
tokens the actor may see and revoke (their own; an admin, everyone's), the role checks, the
embedder check every search makes, and the audit log. Every service of the package holds
one and asks it before it touches a store, so whatever a page shows has passed these checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..auth import User
from ..errors import NotFoundError, StoreError, ZhixingError
from ..models import KnowledgeBase
from ..store.users import StoredToken
from .home import Home

__all__ = ["Access"]


@dataclass(frozen=True)
class Access:
    home: Home
    actor: User

    def require(self, action: str, what: str) -> None:
        """Raise AccessError unless the actor's role allows `action` (core/auth.py)."""
        self.actor.require(action, what)

    def visible(self, kb: KnowledgeBase, restricted: Mapping[int, set[str]]) -> bool:
        members = restricted.get(kb.id)
        return not members or self.actor.role == "admin" or self.actor.name in members

    def list_kbs(self) -> list[KnowledgeBase]:
        """The knowledge bases the actor may see."""
        restricted = self.home.users.restricted()
        return [kb for kb in self.home.catalog.list_kbs() if self.visible(kb, restricted)]

    def visible_names(self) -> set[str]:
        return {kb.name for kb in self.list_kbs()}

    def kb(self, name: str) -> KnowledgeBase:
        """The knowledge base `name` if the actor may see it. A missing one and one restricted
        to others read the same, and the sentence lists only names the actor may see: no
        caller (MCP, Studio, a page) learns that a name it may not see exists."""
        restricted = self.home.users.restricted()
        kb = self.home.catalog.find_kb(str(name))
        if kb is None or not self.visible(kb, restricted):
            visible = [k.name for k in self.home.catalog.list_kbs() if self.visible(k, restricted)]
            raise NotFoundError(
                f"There is no knowledge base named {_quoted(name)} that {self.actor.name} may"
                f" see (known: {', '.join(visible) or 'none yet'})."
            )
        return kb

    def check_name_free(self, name: str) -> None:
        """Raise unless a new knowledge base may take `name`. A name taken by a knowledge base
        the actor may not see is refused without saying that it exists."""
        existing = self.home.catalog.find_kb(name.strip())
        if existing is None:
            return
        if self.visible(existing, self.home.users.restricted()):
            raise StoreError(f"A knowledge base named {existing.name!r} already exists.")
        raise StoreError(f"The name {name.strip()!r} cannot be used; choose another.")

    def scope(self, names: Sequence[str] | None) -> list[KnowledgeBase]:
        """Resolve knowledge-base names (None or ["@all"] = all) to knowledge bases."""
        if names is None or list(names) in (["@all"], ["all"]) or not names:
            return self.list_kbs()
        return [self.kb(n.removeprefix("@")) for n in names]

    def searchable(self, names: Sequence[str] | None) -> list[KnowledgeBase]:
        """`scope(names)`, each checked to be searchable with this home's embedder."""
        kbs = self.scope(names)
        for kb in kbs:
            self.check_embedder(kb)
        return kbs

    def check_embedder(self, kb: KnowledgeBase) -> None:
        embedder = self.home.embedder
        if (kb.embedding, kb.dimension) != (embedder.name, embedder.dimension):
            raise ZhixingError(
                f"{kb.name!r} was built with the embedding {kb.embedding} ({kb.dimension} "
                f"dimensions) but Zhixing is configured with {embedder.name}; set "
                f"ZHIXING_EMBEDDING={kb.embedding} to use it."
            )

    def tokens(self) -> list[StoredToken]:
        """The access tokens the actor may see: their own; an admin's, everyone's."""
        if self.actor.can("admin"):
            return self.home.users.tokens()
        return self.home.users.tokens(user=self.actor.name)

    def token(self, token_id: int) -> StoredToken:
        """Token `token_id` if the actor may see it. Another user's token and a missing one
        read the same, so no one learns which ids exist."""
        found = self.home.users.tokens(token_id=token_id)
        if not found or not (self.actor.can("admin") or found[0].user == self.actor.name):
            raise NotFoundError(f"There is no token {token_id} that {self.actor.name} may see.")
        return found[0]

    def audit(self, action: str, target: str, **detail: Any) -> None:
        self.home.users.audit(self.actor.name, action, target, detail)


def _quoted(name: object, limit: int = 64) -> str:
    """A name a caller sent, quoted for a sentence: escaped, and cut short when it is long."""
    text = str(name)
    return repr(text[:limit]) + ("…" if len(text) > limit else "")
