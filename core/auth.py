"""Users, roles and the built-in login (docs/architecture.md §10).

Three roles, each with everything the one before it may do:

- `viewer`: list knowledge bases, search, ask, run tasks, read the graph and the documents;
- `editor`: also create knowledge bases, add and remove documents, export and import;
- `admin`: also delete knowledge bases, change settings, manage users and members, read the
  audit log.

The rules are checked in `core` (KnowledgeService raises AccessError), so hiding a button in
the app is a courtesy, not the protection. Passwords are hashed with scrypt (hashlib, RFC 7914
parameters n=2**14, r=8, p=1) with a random salt per user; the plain password is never stored.
Failed logins are rate-limited per client address, and per user name from that address: a
client that fails a name's password locks that name for itself only, so nobody can lock another
user out by failing on purpose. A generous ceiling per name from all clients together still
bounds guessing from many addresses.

An access token (for `zhixing mcp --http`) stands for one user until it expires or is revoked.
It is 256 random bits, so it is kept as a plain SHA-256 digest: a slow hash guards a password a
person chose and might reuse, and a token is neither; for the same reason failed token checks
are not throttled (no one guesses 2**256). A token carries its user's label for it and when
it last signed a request in (kept to the minute, so a busy client is not a write per request).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import logging
import re
import secrets
import time
from dataclasses import dataclass

from .errors import AccessError, ConfigError, NotFoundError, StoreError
from .store.users import StoredToken, UserStore

log = logging.getLogger(__name__)

__all__ = [
    "ACCOUNT_MAX_FAILURES",
    "ACTIONS",
    "LOCAL",
    "MAX_FAILURES",
    "MAX_TOKEN_DAYS",
    "MCP_PATH",
    "MCP_PORT",
    "ROLES",
    "FAILURE_WINDOW_S",
    "LoginThrottledError",
    "User",
    "authenticate",
    "check_token_label",
    "check_user_name",
    "hash_password",
    "issue_token",
    "revoke_token",
    "token_user",
    "is_loopback",
    "verify_password",
]

ROLES = ("viewer", "editor", "admin")
# What each action needs: the least role that may do it.
ACTIONS = {
    "read": "viewer",
    "build": "editor",
    "admin": "admin",
}
# Failed logins allowed in the window, per (name, client) and per client (many names tried).
MAX_FAILURES = 5
# ... and per name from all clients together. Without a ceiling, an attacker with many
# addresses (an IPv6 /64 is 2**64 of them) could guess without bound; set high so that locking
# a name out takes 20 addresses and more, against one before.
ACCOUNT_MAX_FAILURES = 100
FAILURE_WINDOW_S = 15 * 60
MIN_PASSWORD = 8

TOKEN_PREFIX = "zx_"  # tells a Zhixing token apart in a config file or a secret scanner
MAX_TOKEN_DAYS = 3650
MAX_TOKEN_LABEL = 64
# A token's last use is written again only once this much later: a minute is what a list of
# tokens shows, and a client busy with many calls does not write the catalog at each one.
TOKEN_USE_EVERY_S = 60.0
# Where `zhixing mcp --http` serves unless told otherwise (cli/mcp_server.py): a token's client
# is configured with this URL.
MCP_PORT = 8502  # beside the app's 8501
MCP_PATH = "/mcp"  # the MCP SDK's default endpoint

_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
_USER_NAME = re.compile(r"^[\w.@+-]{1,64}$")


class LoginThrottledError(AccessError):
    """Too many failed logins: the name (or the client) must wait."""


@dataclass(frozen=True)
class User:
    """Who is acting: a signed-in user, or the local operator (the CLI, localhost)."""

    name: str
    role: str
    local: bool = False

    def can(self, action: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(ACTIONS[action])

    def require(self, action: str, what: str) -> None:
        """Raise AccessError unless this user may do `action`; `what` names it for the user."""
        if not self.can(action):
            need = ACTIONS[action]
            raise AccessError(
                f"{self.name} ({self.role}) may not {what}: that needs the {need} role; "
                "ask an admin."
            )


# The local operator: the CLI on the server itself and the app on localhost with no logins.
LOCAL = User("local", "admin", local=True)


def is_loopback(host: str) -> bool:
    """Whether a server address is reachable from this machine only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def check_user_name(name: str) -> str:
    name = name.strip()
    if not _USER_NAME.match(name):
        raise ConfigError(
            f"{name!r} is not a valid user name: use 1-64 letters, digits or . _ @ + -."
        )
    return name


def check_token_label(label: str) -> str:
    """A token's label as kept: stripped, one line of at most 64 characters."""
    label = label.strip()
    if len(label) > MAX_TOKEN_LABEL or not label.isprintable():
        raise ConfigError(
            f"A token's name is one line of at most {MAX_TOKEN_LABEL} characters; shorten"
            f" {label[:MAX_TOKEN_LABEL]!r}."
        )
    return label


def check_role(role: str) -> str:
    if role not in ROLES:
        raise ConfigError(f"{role!r} is not a role; the roles are {', '.join(ROLES)}.")
    return role


def hash_password(password: str) -> str:
    """An scrypt hash: `scrypt$n$r$p$salt$digest`, salt and digest in base64."""
    if len(password) < MIN_PASSWORD:
        raise ConfigError(f"The password is too short: use at least {MIN_PASSWORD} characters.")
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, **_SCRYPT)
    return "$".join(
        [
            "scrypt",
            str(_SCRYPT["n"]),
            str(_SCRYPT["r"]),
            str(_SCRYPT["p"]),
            _b64(salt),
            _b64(digest),
        ]
    )


def verify_password(password: str, encoded: str) -> bool:
    """Check a password against a stored hash in constant time; a malformed hash never matches."""
    try:
        scheme, n, r, p, salt, digest = encoded.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), n=int(n), r=int(r), p=int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def issue_token(
    store: UserStore,
    name: str,
    days: int,
    *,
    by: str,
    label: str = "",
    now: float | None = None,
) -> tuple[str, StoredToken]:
    """A new access token for user `name`, valid for `days`: the token itself (shown once,
    never stored) and what the store keeps of it. `by` names who issued it, for the audit log;
    `label` is what it is for ("Claude Desktop")."""
    if not 1 <= days <= MAX_TOKEN_DAYS:
        raise ConfigError(f"A token lasts 1 to {MAX_TOKEN_DAYS} days, not {days}.")
    label = check_token_label(label)
    if store.get(name) is None:
        raise NotFoundError(
            f"There is no user named {name!r}; add one first with "
            f"`zhixing user add {name} --role viewer --oidc`."
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = time.time() if now is None else now
    stored = store.add_token(name, _digest(token), now + days * 86400, label)
    store.audit(by, "token.create", name, {"token": stored.id, "days": days, "label": label})
    return token, stored


def revoke_token(store: UserStore, token_id: int, *, by: str) -> StoredToken:
    """Revoke a token at once: the next request that carries it is refused."""
    found = store.tokens(token_id=token_id)
    if not found or not store.revoke_token(token_id):
        raise NotFoundError(f"There is no token {token_id}; `zhixing token list` shows them.")
    store.audit(by, "token.revoke", found[0].user, {"token": token_id})
    return found[0]


def token_user(store: UserStore, token: str, *, now: float | None = None) -> User | None:
    """The user a token stands for, with their role as stored now (a changed role applies to
    the next request); None when the token is unknown, revoked or expired, or its user gone."""
    now = time.time() if now is None else now
    stored = store.token(_digest(token)) if token.startswith(TOKEN_PREFIX) else None
    if stored is None or stored.expires_at <= now:
        return None
    user = store.get(stored.user)
    if user is None:
        return None
    if stored.last_used_at is None or now - stored.last_used_at >= TOKEN_USE_EVERY_S:
        try:
            store.token_used(stored.id, now)
        except StoreError:  # the last use is a note for its owner: a full disk refuses no one
            log.warning("token %s: its use could not be recorded", stored.id, exc_info=True)
    return User(user.name, user.role)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# A hash checked when the user has none (no such user, or OIDC only), so that a wrong name costs
# the same time as a wrong password (no user-name oracle).
_DUMMY_HASH = "$".join(
    ["scrypt", str(_SCRYPT["n"]), "8", "1", "AAAAAAAAAAAAAAAAAAAAAA==", "A" * 86 + "=="]
)


def authenticate(
    store: UserStore, name: str, password: str, *, client: str = "", now: float | None = None
) -> User:
    """Sign a user in with the built-in login; raise AccessError (or LoginThrottledError)."""
    now = time.time() if now is None else now
    name = name.strip()
    since = now - FAILURE_WINDOW_S
    for recent, limit in (
        (store.failures_since(since, name=name, client=client) if name else [], MAX_FAILURES),
        (store.failures_since(since, client=client) if client else [], MAX_FAILURES),
        (store.failures_since(since, name=name) if name else [], ACCOUNT_MAX_FAILURES),
    ):
        if len(recent) >= limit:
            wait = max(1, round((recent[-limit] + FAILURE_WINDOW_S - now) / 60))
            raise LoginThrottledError(
                f"Too many failed logins; try again in {wait} minute(s) or ask an admin."
            )
    stored = store.get(name) if name else None
    # A name without a hash (unknown, or a user who signs in through OIDC only) is checked
    # against the dummy: every failure then costs one scrypt, and the time tells nothing.
    encoded = stored.password_hash if stored else ""
    ok = verify_password(password, encoded or _DUMMY_HASH) and bool(encoded)
    if not ok or stored is None:
        store.record_failure(name, client)
        store.audit(name or "?", "login.failed", "", {"client": client})
        raise AccessError("Wrong user name or password.")
    # Only this client's failures go: other clients' still count towards the name's ceiling.
    store.clear_failures(name, client)
    store.audit(stored.name, "login", "", {"client": client})
    return User(stored.name, stored.role)


def _scrypt(password: str, salt: bytes, *, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=64)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
