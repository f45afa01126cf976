"""The access commands of `zhixing` (docs/architecture.md §9, §10): users, members, the audit log, serve.

They run as the local operator (whoever can run commands on the server may manage it), and
their changes go to the audit log under that name.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import tomllib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.auth import MIN_PASSWORD, ROLES, is_loopback
from ..core.config import Settings
from ..core.errors import ConfigError
from .output import print_rows

if TYPE_CHECKING:
    from ..core.service import KnowledgeService

__all__ = ["HANDLERS", "add_parsers", "auth_configured"]

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app" / "main.py"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    user = sub.add_parser("user", help="add, list or remove the users of the login gate")
    user_sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    add = user_sub.add_parser("add", help="add a user, or change one's role and password")
    add.add_argument("name")
    add.add_argument("--role", choices=ROLES, required=True)
    how = add.add_mutually_exclusive_group()
    how.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    how.add_argument(
        "--oidc", action="store_true", help="no password: the user signs in through st.login"
    )
    user_list = user_sub.add_parser("list", help="list the users and their roles")
    user_list.add_argument("--json", action="store_true")
    remove = user_sub.add_parser("remove", help="remove a user")
    remove.add_argument("name")

    members = sub.add_parser(
        "members", help="show or set who may see a knowledge base (default: every user)"
    )
    members.add_argument("name")
    group = members.add_mutually_exclusive_group()
    group.add_argument("--set", dest="users", help="comma-separated user names")
    group.add_argument("--clear", action="store_true", help="open it to every user again")
    members.add_argument("--json", action="store_true")

    audit = sub.add_parser("audit", help="who built, removed, deleted or changed what, and when")
    audit.add_argument("--limit", type=int, default=50)
    audit.add_argument("--json", action="store_true")

    serve = sub.add_parser("serve", help="start the web app (logins required off localhost)")
    serve.add_argument("--host", default="localhost")
    serve.add_argument("--port", type=int, default=8501)
    serve.add_argument(
        "--milvus-uri",
        metavar="URI",
        help="keep vectors on this Milvus server (http://host:19530), so that `zhixing` commands"
        " with the same ZHIXING_MILVUS_URI can build while the app serves",
    )


def auth_configured(settings: Settings, secrets_files: list[Path] | None = None) -> str:
    """How users will sign in: "oidc", "builtin", or "" when nothing is configured."""
    for path in secrets_files if secrets_files is not None else _secrets_files():
        try:
            secrets = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path} cannot be read ({exc}); fix it first.") from exc
        auth = secrets.get("auth")
        if isinstance(auth, dict) and auth.get("redirect_uri") and auth.get("cookie_secret"):
            return "oidc"
    from ..core.store import Catalog
    from ..core.store.catalog import catalog_exists
    from ..core.store.users import UserStore

    if not catalog_exists(settings.catalog_target):  # a Postgres server away: one sentence
        return ""
    catalog = Catalog(settings.catalog_target)
    try:
        return "builtin" if UserStore(catalog.db).count(with_password=True) else ""
    finally:
        catalog.close()


def _secrets_files() -> list[Path]:
    """Where Streamlit reads secrets.toml: the user's folder, then the project's."""
    return [Path.home() / ".streamlit" / "secrets.toml", ROOT / ".streamlit" / "secrets.toml"]


def _service(settings: Settings) -> KnowledgeService:  # imported lazily: `--help` stays fast
    from ..core.service import KnowledgeService

    return KnowledgeService(settings)


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"Password (at least {MIN_PASSWORD} characters): ")
    if getpass.getpass("Again: ") != first:
        raise ConfigError("The two passwords differ; nothing was changed.")
    return first


def _user_add(args: argparse.Namespace, settings: Settings) -> int:
    password = None if args.oidc else _read_password(args.password_stdin)
    with _service(settings) as svc:
        user = svc.users.add(args.name, args.role, password)
    how = "signs in through the identity provider" if args.oidc else "password stored as scrypt"
    print(f"User {user.name!r} is {user.role} ({how}).")
    return 0


def _user_list(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        users = svc.users.all()
    rows = [
        {"name": u.name, "role": u.role, "password": bool(u.password_hash), "created": u.created_at}
        for u in users
    ]
    print_rows(
        rows,
        as_json=args.json,
        empty="No users yet; add one with: zhixing user add NAME --role admin",
        line=lambda r: f"{r['name']}\t{r['role']}\t{'password' if r['password'] else 'oidc'}",
    )
    return 0


def _user_remove(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        svc.users.remove(args.name)
    print(f"Removed user {args.name!r}.")
    return 0


def _members(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        if args.clear:
            names = svc.kbs.restrict(args.name, [])
        elif args.users is not None:
            names = svc.kbs.restrict(args.name, args.users.split(","))
        else:
            names = svc.kbs.members(args.name)
    if args.json:
        print(json.dumps({"name": args.name, "members": names}, ensure_ascii=False))
    elif names:
        print(f"{args.name!r} is restricted to: {', '.join(names)} (and admins).")
    else:
        print(f"{args.name!r} is open to every user.")
    return 0


def _audit(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        entries = svc.admin.audit_log(args.limit)
    if args.json:
        print(json.dumps([e.to_json() for e in entries], ensure_ascii=False))
        return 0
    for e in entries:
        when = datetime.fromtimestamp(e.at).isoformat(sep=" ", timespec="seconds")
        detail = json.dumps(e.detail, ensure_ascii=False) if e.detail else ""
        print(f"{when}\t{e.user}\t{e.action}\t{e.target}\t{detail}")
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    # The app runs from the project folder; the home stays where this command would use it.
    env = {**os.environ, "ZHIXING_HOME": str(settings.home.resolve())}
    if not is_loopback(args.host):
        if not auth_configured(settings):
            print(
                f"zhixing: serving on {args.host} needs logins, and none is configured: add an "
                "admin first with `zhixing user add NAME --role admin` (or configure OIDC in "
                ".streamlit/secrets.toml).",
                file=sys.stderr,
            )
            return 2
        env["ZHIXING_AUTH"] = "required"
    if args.milvus_uri:
        env["ZHIXING_MILVUS_URI"] = _reachable(args.milvus_uri, settings.milvus_token)
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address",
        args.host,
        "--server.port",
        str(args.port),
    ]
    print(f"Zhixing on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    os.chdir(ROOT)  # Streamlit reads .streamlit/config.toml from the working directory
    os.execvpe(command[0], command, env)
    return 0  # not reached


def _reachable(uri: str, token: str) -> str:
    """The server URI, once it answered: a typo or a stopped server is said now, in one
    sentence, not as the app's first page failing."""
    from ..core.errors import ZhixingError
    from ..core.store import VectorStore

    if not uri.startswith(("http://", "https://", "tcp://", "grpc://")):
        raise ZhixingError(
            f"--milvus-uri takes a server address such as http://127.0.0.1:19530, not {uri!r}."
        )
    VectorStore(uri, token).close()  # raises StoreError naming the server when it is down
    return uri


HANDLERS = {
    "user add": _user_add,
    "user list": _user_list,
    "user remove": _user_remove,
    "members": _members,
    "audit": _audit,
    "serve": _serve,
}
