"""Users, knowledge-base members, failed logins, access tokens and the audit log, in the
catalog's database.

Like the run log, these tables live in the catalog file but are created here. Passwords are
stored only as scrypt hashes and tokens only as SHA-256 digests (core/auth.py makes and checks
both); this module never sees a plain password or token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .dialect import SqlDatabase

__all__ = ["AuditEntry", "StoredToken", "StoredUser", "UserStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    password_hash TEXT NOT NULL DEFAULT '',
    created_at {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_members (
    kb_id INTEGER NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    user_name TEXT NOT NULL,
    PRIMARY KEY (kb_id, user_name)
);
CREATE TABLE IF NOT EXISTS login_failures (
    id {id},
    name TEXT NOT NULL,
    client TEXT NOT NULL DEFAULT '',
    at {real} NOT NULL
);
CREATE INDEX IF NOT EXISTS login_failures_name ON login_failures(name, at);
CREATE INDEX IF NOT EXISTS login_failures_client ON login_failures(client, at);
CREATE TABLE IF NOT EXISTS preferences (
    user_name TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (user_name, key)
);
CREATE TABLE IF NOT EXISTS tokens (
    id {id},
    user_name TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    created_at {real} NOT NULL,
    expires_at {real} NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    last_used_at {real}
);
CREATE TABLE IF NOT EXISTS audit (
    id {id},
    at {real} NOT NULL,
    user_name TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '{}'
);
"""


@dataclass(frozen=True)
class StoredUser:
    name: str
    role: str
    password_hash: str  # empty for a user who signs in through the identity provider only
    created_at: float


@dataclass(frozen=True)
class StoredToken:
    """An access token of a user (`zhixing mcp --http`): its digest, never the token itself;
    `label` is what its user called it ("Claude Desktop"), `last_used_at` when it last signed a
    request in (None: never, or before uses were kept)."""

    id: int
    user: str
    digest: str
    created_at: float
    expires_at: float
    label: str = ""
    last_used_at: float | None = None


@dataclass(frozen=True)
class AuditEntry:
    at: float
    user: str
    action: str
    target: str
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "user": self.user,
            "action": self.action,
            "target": self.target,
            "detail": self.detail,
        }


class UserStore:
    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        with db.transaction():
            db.executescript(db.dialect.ddl(_SCHEMA))
            _migrate(db)

    # --- users -------------------------------------------------------------------------------

    def put(self, name: str, role: str, password_hash: str) -> None:
        """Add a user, or replace the role and password of an existing one."""
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO users (name, role, password_hash, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(name) DO UPDATE SET role = excluded.role,"
                " password_hash = excluded.password_hash",
                (name, role, password_hash, time.time()),
            )

    def get(self, name: str) -> StoredUser | None:
        rows = self.db.rows("SELECT * FROM users WHERE name = ?", (name,))
        return _user(rows[0]) if rows else None

    def preference(self, name: str, key: str) -> str | None:
        """A user's saved choice (the UI language, say), or None when they made none."""
        rows = self.db.rows(
            "SELECT value FROM preferences WHERE user_name = ? AND key = ?", (name, key)
        )
        return str(rows[0]["value"]) if rows else None

    def set_preference(self, name: str, key: str, value: str) -> None:
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO preferences (user_name, key, value) VALUES (?, ?, ?)"
                " ON CONFLICT(user_name, key) DO UPDATE SET value = excluded.value",
                (name, key, value),
            )

    def all(self) -> list[StoredUser]:
        return [_user(r) for r in self.db.rows("SELECT * FROM users ORDER BY name")]

    def remove(self, name: str) -> bool:
        """Remove a user and their memberships, except where they were a knowledge base's only
        member: that row stays, so the knowledge base stays restricted (to admins, until an
        admin changes its members) instead of opening to everyone."""
        with self.db.transaction():
            cursor = self.db.execute("DELETE FROM users WHERE name = ?", (name,))
            self.db.execute("DELETE FROM tokens WHERE user_name = ?", (name,))
            self.db.execute(
                "DELETE FROM kb_members WHERE user_name = ? AND kb_id IN (SELECT kb_id FROM"
                " kb_members GROUP BY kb_id HAVING COUNT(*) > 1)",
                (name,),
            )
            return cursor.rowcount > 0

    def count(self, *, with_password: bool = False) -> int:
        sql = "SELECT COUNT(*) AS n FROM users"
        if with_password:
            sql += " WHERE password_hash != ''"
        return int(self.db.rows(sql)[0]["n"])

    # --- knowledge-base members ------------------------------------------------------------------

    def members(self, kb_id: int) -> list[str]:
        """The users a knowledge base is restricted to; empty = every user may see it."""
        rows = self.db.rows(
            "SELECT user_name FROM kb_members WHERE kb_id = ? ORDER BY user_name", (kb_id,)
        )
        return [r["user_name"] for r in rows]

    def set_members(self, kb_id: int, names: Iterable[str]) -> None:
        with self.db.transaction():
            self.db.execute("DELETE FROM kb_members WHERE kb_id = ?", (kb_id,))
            self.db.executemany(
                "INSERT INTO kb_members (kb_id, user_name) VALUES (?, ?)",
                [(kb_id, n) for n in dict.fromkeys(names)],
            )

    def restricted(self) -> dict[int, set[str]]:
        """Every restricted knowledge base and its members."""
        out: dict[int, set[str]] = {}
        for row in self.db.rows("SELECT kb_id, user_name FROM kb_members"):
            out.setdefault(int(row["kb_id"]), set()).add(row["user_name"])
        return out

    # --- access tokens -----------------------------------------------------------------------------

    def add_token(self, name: str, digest: str, expires_at: float, label: str = "") -> StoredToken:
        """Keep a new token of user `name` by its digest, valid until `expires_at`."""
        with self.db.transaction():
            [row] = self.db.rows(
                "INSERT INTO tokens (user_name, digest, created_at, expires_at, label)"
                " VALUES (?, ?, ?, ?, ?) RETURNING id",
                (name, digest, time.time(), expires_at, label),
            )
            token_id = int(row["id"])
        return self.tokens(token_id=token_id)[0]

    def token(self, digest: str) -> StoredToken | None:
        """The token with this digest, expired or not; None when there is none."""
        rows = self.db.rows("SELECT * FROM tokens WHERE digest = ?", (digest,))
        return _token(rows[0]) if rows else None

    def tokens(self, *, token_id: int | None = None, user: str | None = None) -> list[StoredToken]:
        """Every token, oldest first: or the one with `token_id`, or those of `user`."""
        params: tuple[object, ...] = ()
        where = ""
        if token_id is not None:
            where, params = " WHERE id = ?", (token_id,)
        elif user is not None:
            where, params = " WHERE user_name = ?", (user,)
        return [_token(r) for r in self.db.rows(f"SELECT * FROM tokens{where} ORDER BY id", params)]

    def token_used(self, token_id: int, at: float) -> None:
        """Record that token `token_id` signed a request in at `at`."""
        with self.db.transaction():
            self.db.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", (at, token_id))

    def revoke_token(self, token_id: int) -> bool:
        """Forget a token; whether there was one."""
        with self.db.transaction():
            return self.db.execute("DELETE FROM tokens WHERE id = ?", (token_id,)).rowcount > 0

    # --- failed logins -----------------------------------------------------------------------------

    def record_failure(self, name: str, client: str = "") -> None:
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO login_failures (name, client, at) VALUES (?, ?, ?)",
                (name, client, time.time()),
            )
            # Keep the table small: a day of failures is more than any window needs.
            self.db.execute("DELETE FROM login_failures WHERE at < ?", (time.time() - 86400,))

    def failures_since(
        self, since: float, *, name: str | None = None, client: str | None = None
    ) -> list[float]:
        """When the failed logins since `since` happened, for a name, a client, or both (a name
        from one client); None matches any."""
        if name is None and client is None:
            raise ValueError("failures_since needs a name, a client or both")
        filters = {k: v for k, v in (("name", name), ("client", client)) if v is not None}
        where = "".join(f"{column} = ? AND " for column in filters)
        rows = self.db.rows(
            f"SELECT at FROM login_failures WHERE {where}at >= ? ORDER BY at",
            (*filters.values(), since),
        )
        return [float(r["at"]) for r in rows]

    def clear_failures(self, name: str, client: str | None = None) -> None:
        """Forget a name's failed logins: those from `client`, or from every client (None)."""
        sql, values = "DELETE FROM login_failures WHERE name = ?", [name]
        if client is not None:
            sql, values = sql + " AND client = ?", [name, client]
        with self.db.transaction():
            self.db.execute(sql, values)

    # --- audit log ---------------------------------------------------------------------------------

    def audit(
        self, user: str, action: str, target: str = "", detail: Mapping[str, Any] | None = None
    ) -> None:
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO audit (at, user_name, action, target, detail) VALUES (?, ?, ?, ?, ?)",
                (
                    time.time(),
                    user,
                    action,
                    target,
                    json.dumps(dict(detail or {}), ensure_ascii=False, default=str),
                ),
            )

    def audit_log(self, limit: int = 200) -> list[AuditEntry]:
        """The latest audit entries, newest first."""
        rows = self.db.rows("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,))
        return [
            AuditEntry(
                at=float(r["at"]),
                user=r["user_name"],
                action=r["action"],
                target=r["target"],
                detail=json.loads(r["detail"]),
            )
            for r in rows
        ]


def _user(row: dict[str, Any]) -> StoredUser:
    return StoredUser(
        name=row["name"],
        role=row["role"],
        password_hash=row["password_hash"],
        created_at=float(row["created_at"]),
    )


def _token(row: dict[str, Any]) -> StoredToken:
    used = row["last_used_at"]
    return StoredToken(
        id=int(row["id"]),
        user=row["user_name"],
        digest=row["digest"],
        created_at=float(row["created_at"]),
        expires_at=float(row["expires_at"]),
        label=row["label"],
        last_used_at=None if used is None else float(used),
    )


def _migrate(db: SqlDatabase) -> None:
    """Add the columns of `tokens` that an older home lacks."""
    if "label" not in db.columns("tokens"):  # tokens from before labels and uses were kept
        db.execute("ALTER TABLE tokens ADD COLUMN label TEXT NOT NULL DEFAULT ''")
        db.execute(db.dialect.ddl("ALTER TABLE tokens ADD COLUMN last_used_at {real}"))
