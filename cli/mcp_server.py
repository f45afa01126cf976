"""`zhixing mcp` and `zhixing token`: the knowledge bases as an MCP server (the official `mcp`
SDK), over stdio or streamable HTTP, and the access tokens its HTTP clients sign in with.

The tools and resources are mcp_tools.py's; this module picks the transport and who each call
acts for:

- stdio (`zhixing mcp`, started by an IDE agent): one user for the whole session, `--user
  NAME` (that stored user's role and visibility), else the local user of the `zhixing` command.
  `--user` selects a role; it is no boundary against whoever starts the server, who can read
  the home (core/home.py keeps the home its owner's alone). Standard output carries the
  protocol, so nothing else is printed there.
- streamable HTTP (`zhixing mcp --http`, on 127.0.0.1:8502/mcp unless `--host`/`--port` say
  otherwise): one server for many users, each request signed in by the token it carries
  (`Authorization: Bearer zx_…`, made by `zhixing token create NAME`). The token names a stored
  user; their role is read at each request, so a changed role, a removed user or a revoked
  token applies to the next request. A request without a valid token is refused (401) with
  one sentence of ours: in a JSON-RPC error body, which the SDK's client raises, and in the
  `WWW-Authenticate: Bearer` challenge (`error="invalid_token"` when a token was sent).

Either way a misspelt ZHIXING_HOME is refused in one sentence before anything is created, and
an unknown `--user` is one sentence on stderr with a non-zero exit.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.auth import MAX_TOKEN_DAYS, MCP_PATH, MCP_PORT, User, is_loopback
from ..core.config import Settings
from ..core.errors import AccessError, ConfigError, NotFoundError
from .output import print_rows

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.mcpserver import Context
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ..core.service import KnowledgeService
    from ..core.store.users import UserStore

log = logging.getLogger(__name__)

__all__ = ["EXISTING_HOME", "HANDLERS", "add_parsers", "require_home"]

# The commands that work on a home that must already exist: serving an empty, new home (a
# misspelt ZHIXING_HOME) would answer every call with nothing.
EXISTING_HOME = frozenset({"mcp", "token create", "token list", "token revoke"})
DEFAULT_PORT = MCP_PORT
PATH = MCP_PATH


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve the knowledge bases to MCP clients over stdio or streamable HTTP"
    )
    mcp.add_argument(
        "--user",
        metavar="NAME",
        help="stdio only: act as this stored user, with their role and visibility (default: the"
        " local user); it selects a role, and is no boundary against whoever can read the home",
    )
    mcp.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP, each request signed in by a user's token"
        " (`zhixing token create`), instead of stdio",
    )
    mcp.add_argument(
        "--host", default="127.0.0.1", help="with --http: the address to bind (default 127.0.0.1)"
    )
    mcp.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"with --http (default {DEFAULT_PORT})"
    )

    token = sub.add_parser("token", help="access tokens for `zhixing mcp --http`, one per user")
    token_sub = token.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    create = token_sub.add_parser("create", help="make a token for a user (shown once)")
    create.add_argument("name", help="the stored user the token signs in as")
    create.add_argument(
        "--days", type=int, default=90, help=f"valid for this many days, 1 to {MAX_TOKEN_DAYS}"
    )
    create.add_argument("--label", default="", help="what the token is for, e.g. 'Claude Desktop'")
    listed = token_sub.add_parser(
        "list", help="list the tokens: id, user, label, created, expiry, last used"
    )
    listed.add_argument("--json", action="store_true")
    revoke = token_sub.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("id", type=int)


def require_home(settings: Settings) -> None:
    """Raise unless the home holds a catalog: a misspelt ZHIXING_HOME is said, not made."""
    from ..core.store.catalog import catalog_exists

    if catalog_exists(settings.catalog_target):  # a Postgres server away: one sentence
        return
    if settings.catalog_on_postgres:
        raise ConfigError(
            "The PostgreSQL database of ZHIXING_CATALOG_URI holds no Zhixing catalog yet;"
            " check the URI, or make a home first with `zhixing kb create NAME`."
        )
    raise ConfigError(
        f"There is no Zhixing home at {settings.home} (no catalog.db there); check"
        " ZHIXING_HOME, or make a home first with `zhixing kb create NAME`."
    )


# --- serving -------------------------------------------------------------------------------


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from ..core.service import KnowledgeService

    if args.http and args.user:
        raise ConfigError(
            "--user is for stdio; over --http each request signs in with its own user's token."
        )
    if args.http:
        with _users(settings) as users:
            if not users.tokens():
                raise ConfigError(
                    "No access tokens yet, so every request would be refused; make one with"
                    " `zhixing token create NAME` first."
                )
    with KnowledgeService(settings) as service:
        if args.http:
            _serve_http(service, args.host, args.port)
        else:
            _serve_stdio(service, args.user)
    return 0


def _serve_stdio(service: KnowledgeService, name: str | None) -> None:
    from .mcp_tools import build_server

    caller = service
    if name:
        stored = {u.name: u for u in service.users.all()}.get(name)
        if stored is None:
            raise NotFoundError(
                f"There is no user named {name!r}; add one with "
                f"`zhixing user add {name} --role viewer --oidc`."
            )
        caller = service.as_user(User(stored.name, stored.role))
    build_server(lambda ctx: caller).run("stdio")


def _serve_http(service: KnowledgeService, host: str, port: int) -> None:
    import uvicorn
    from mcp.server.auth.settings import AuthSettings

    from .mcp_tools import build_server

    def caller(ctx: Context[Any, Any]) -> KnowledgeService:
        # The bearer middleware put the user the token signed in on the request (`_Tokens`);
        # a request without one never reaches a tool.
        request = ctx.request_context.request
        token: AccessToken | None = getattr(getattr(request, "user", None), "access_token", None)
        if token is None or token.subject is None or not token.claims:
            raise AccessError("This request carries no valid token; sign in with one.")
        return service.as_user(User(token.subject, str(token.claims["role"])))

    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    # No authorization server: a token is made by `zhixing token create`, so `issuer_url` is
    # only the field's required value, and with no resource_server_url the 401 sends a client
    # to no OAuth discovery it could not complete.
    auth = AuthSettings(issuer_url=base, resource_server_url=None)  # type: ignore[arg-type]
    server = build_server(caller, token_verifier=_Tokens(service), auth=auth)
    # The SDK's app (its bearer middleware, its DNS-rebinding check for `host`), served as its
    # own `run("streamable-http")` serves it, with its refusals in our words.
    app = server.streamable_http_app(streamable_http_path=PATH, host=host)
    where = "this machine only" if is_loopback(host) else "the network: put TLS in front of it"
    print(f"Zhixing MCP on {base}{PATH} (streamable HTTP; {where}).", file=sys.stderr, flush=True)
    uvicorn.run(_Refusals(app), host=host, port=port, log_level=server.settings.log_level.lower())


# Said with a 401, in the body as a JSON-RPC error (which the SDK's client raises with this
# message) and, for a token that fails, in the WWW-Authenticate header. RFC 6750 allows only
# printable ASCII but `"` and `\` in a header's error_description.
NO_TOKEN = (
    "This request carries no access token; send the header `Authorization: Bearer <token>` with"
    " a token made by `zhixing token create NAME` or on the app's settings page."
)
BAD_TOKEN = (
    "This access token is unknown, revoked or expired, or its user was removed; make a new one"
    " with `zhixing token create NAME` or on the app's settings page."
)


def _bearer(scope: Scope) -> str:
    """The bearer token a request carries, as the SDK's backend reads it ("" for none)."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            text = value.decode("latin-1")
            return text[7:] if text.lower().startswith("bearer ") else ""
    return ""


class _Refusals:
    """ASGI around the SDK's app: its 401 (a request the bearer middleware let no user through
    for) is answered with one sentence of ours instead of "Authentication required"."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        refused = False

        async def answer(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 401:
                refused = True
                await _refuse(send, has_token=bool(_bearer(scope)))
            elif not refused:  # the SDK's own body for its 401 is dropped
                await send(message)

        await self._app(scope, receive, answer)


async def _refuse(send: Send, *, has_token: bool) -> None:
    import json

    from mcp.types import INVALID_REQUEST

    sentence = BAD_TOKEN if has_token else NO_TOKEN
    # RFC 6750 §3.1: a request with no credentials gets the challenge without an error code.
    challenge = 'Bearer realm="zhixing"'
    if has_token:
        challenge += f', error="invalid_token", error_description="{sentence}"'
    # The id is null: the request is refused before its body is read (JSON-RPC 2.0 §5).
    error = {"code": INVALID_REQUEST, "message": sentence}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge.encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Tokens:
    """The SDK's TokenVerifier over the home's tokens: a request's bearer token, checked at
    each request, becomes the stored user it stands for (core/auth.py `token_user`)."""

    def __init__(self, service: KnowledgeService) -> None:
        self._service = service

    async def verify_token(self, token: str) -> AccessToken | None:
        import anyio.to_thread
        from mcp.server.auth.provider import AccessToken

        # The catalog is SQLite behind a lock a tool's thread may hold: not on the event loop.
        user = await anyio.to_thread.run_sync(self._service.users.token_user, token)
        if user is None:
            log.info("mcp: a request with an unknown, revoked or expired token was refused")
            return None
        # client_id and subject both name the user: the SDK binds a session to them, so one
        # user's session cannot be continued with another user's token.
        return AccessToken(
            token=token,
            client_id=user.name,
            subject=user.name,
            scopes=[],
            claims={"role": user.role},
        )


# --- tokens --------------------------------------------------------------------------------


@contextmanager
def _users(settings: Settings) -> Iterator[UserStore]:
    """The home's user store, over its catalog only: token commands work while `zhixing mcp`
    (or the app) holds the home's vectors."""
    from ..core.store import Catalog
    from ..core.store.users import UserStore

    catalog = Catalog(settings.catalog_target)
    try:
        yield UserStore(catalog.db)
    finally:
        catalog.close()


def _token_create(args: argparse.Namespace, settings: Settings) -> int:
    from ..core.auth import LOCAL, issue_token

    with _users(settings) as users:
        token, stored = issue_token(users, args.name, args.days, by=LOCAL.name, label=args.label)
    until = datetime.fromtimestamp(stored.expires_at).isoformat(sep=" ", timespec="minutes")
    print(token)
    print(
        f"Token {stored.id} signs in as {stored.user} until {until}; it is shown only now: give it"
        " to the MCP client as the header `Authorization: Bearer <token>`.",
        file=sys.stderr,
    )
    return 0


def _token_list(args: argparse.Namespace, settings: Settings) -> int:
    with _users(settings) as users:
        tokens = users.tokens()

    def when(at: float | None) -> str:
        return datetime.fromtimestamp(at).isoformat(sep=" ", timespec="minutes") if at else "never"

    rows = [
        {
            "id": t.id,
            "user": t.user,
            "label": t.label,
            "created": t.created_at,
            "expires": t.expires_at,
            "last_used": t.last_used_at,
        }
        for t in tokens
    ]
    print_rows(
        rows,
        as_json=args.json,
        empty="No tokens yet; make one with: zhixing token create NAME",
        line=lambda r: "\t".join(
            [
                str(r["id"]),
                r["user"],
                r["label"] or "-",
                f"created {when(r['created'])}",
                f"expires {when(r['expires'])}",
                f"last used {when(r['last_used'])}",
            ]
        ),
    )
    return 0


def _token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    from ..core.auth import LOCAL, revoke_token

    with _users(settings) as users:
        stored = revoke_token(users, args.id, by=LOCAL.name)
    print(f"Revoked token {stored.id} of {stored.user}.")
    return 0


HANDLERS = {
    "mcp": _mcp,
    "token create": _token_create,
    "token list": _token_list,
    "token revoke": _token_revoke,
}
