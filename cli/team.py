"""`make serve-team`: a team's whole set on one machine, started and stopped together — a catalog
on PostgreSQL, a Milvus server (`milvus-lite server`) and the app (docs/architecture.md §10).

Each piece that the environment already names (ZHIXING_CATALOG_URI, ZHIXING_MILVUS_URI) is used
as it is; the others are started here, their data under `--data`: PostgreSQL from Debian's
binaries (`initdb` once, then `pg_ctl`; on a unix socket in its data folder unless
`--pg-listen` opens a TCP port for instances on other machines), Milvus Lite's gRPC server on
`--milvus-port`. The line it prints first is what a second instance, or a `zhixing` command,
exports to join the same set. Ctrl-C (or SIGTERM) stops the app, then what this started.

PostgreSQL refuses to run as root: a root run starts it as `nobody`, who is given its folder.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

__all__ = ["main", "pg_binaries", "server_user"]

DATABASE = "zhixing"


def pg_binaries() -> Path | None:
    """The folder of `initdb` and `pg_ctl`: on PATH, else Debian's newest major."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    majors = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    return majors[-1].parent if majors else None


def server_user(folder: Path) -> dict[str, Any]:
    """What `subprocess.run` needs to run PostgreSQL's tools as a user the server accepts:
    nothing for an ordinary user; for root, `nobody`, who is given `folder`."""
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


def _tool(argv: list[Any], as_user: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": "/tmp"}
    return subprocess.run(
        [str(a) for a in argv], check=True, capture_output=True, text=True, env=env, **as_user
    )


@contextmanager
def postgres(folder: Path, listen: str, port: int) -> Iterator[str]:
    """Start (creating it the first time) the cluster in `folder`; yield the catalog's URI."""
    bin_dir = pg_binaries()
    if bin_dir is None:
        raise SystemExit(
            "zhixing: PostgreSQL is not installed (no initdb and pg_ctl); install Debian's"
            " `postgresql` package, or set ZHIXING_CATALOG_URI to a PostgreSQL database."
        )
    folder.mkdir(parents=True, exist_ok=True)
    as_user = server_user(folder)
    data, log = folder / "data", folder / "server.log"
    if not (data / "PG_VERSION").exists():
        _tool([bin_dir / "initdb", "-D", data, "-U", "zhixing", "--auth=trust", "-E", "UTF8",
               "--no-locale"], as_user)  # fmt: skip
    options = f"-k {folder} -p {port} -c listen_addresses='{listen}'"
    _tool([bin_dir / "pg_ctl", "-D", data, "-l", log, "-w", "-o", options, "start"], as_user)
    try:
        uri = f"postgresql://zhixing@/{DATABASE}?host={folder}&port={port}"
        _create_database(uri.replace(f"/{DATABASE}?", "/postgres?"))
        yield uri
    finally:
        _tool([bin_dir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"], as_user)


def _create_database(admin_uri: str) -> None:
    import psycopg

    with psycopg.connect(admin_uri, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(f"CREATE DATABASE {DATABASE}".encode())


@contextmanager
def milvus(folder: Path, port: int, timeout_s: float = 60) -> Iterator[str]:
    """Run Milvus Lite's gRPC server on 127.0.0.1:`port`; yield its URI once it answers."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("milvus-lite", path=str(Path(sys.executable).parent)) or "milvus-lite"
    argv = [exe, "server", "--data-dir", str(folder), "--host", "127.0.0.1", "--port", str(port)]
    with (folder.parent / "milvus.log").open("ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise SystemExit(
                    f"zhixing: the Milvus server exited; see {folder.parent}/milvus.log"
                )
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"zhixing: the Milvus server did not start within {timeout_s:.0f} s"
                    ) from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_for_a_login(host: str, env: dict[str, str]) -> None:
    """Off localhost the app needs a user who can sign in; the first time there is none, and
    only now, with the catalog up, can one be added: say how, and wait for it."""
    from ..core.auth import is_loopback
    from ..core.config import Settings
    from .serve import auth_configured

    if is_loopback(host) or auth_configured(Settings.from_env(env)):
        return
    print(
        f"zhixing: serving on {host} needs a user who can sign in, and there is none yet; in"
        " another terminal, with the export above: zhixing user add NAME --role admin"
        " (waiting for it…)",
        flush=True,
    )
    while not auth_configured(Settings.from_env(env)):
        time.sleep(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make serve-team", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="where PostgreSQL and Milvus keep their data"
    )
    parser.add_argument("--host", default="0.0.0.0", help="the app's address")
    parser.add_argument("--port", type=int, default=8501, help="the app's port")
    parser.add_argument("--milvus-port", type=int, default=19530)
    parser.add_argument("--pg-port", type=int, default=5432)
    parser.add_argument(
        "--pg-listen", default="", help="PostgreSQL's TCP addresses (default: its unix socket only)"
    )
    args = parser.parse_args(argv)
    data = args.data.resolve()
    env = dict(os.environ)
    with ExitStack() as stack:
        if not env.get("ZHIXING_CATALOG_URI"):
            env["ZHIXING_CATALOG_URI"] = stack.enter_context(
                postgres(data / "postgres", args.pg_listen, args.pg_port)
            )
        if not env.get("ZHIXING_MILVUS_URI"):
            env["ZHIXING_MILVUS_URI"] = stack.enter_context(
                milvus(data / "milvus", args.milvus_port)
            )
        shared = " ".join(
            f"{key}={shlex.quote(env[key])}"
            for key in ("ZHIXING_CATALOG_URI", "ZHIXING_MILVUS_URI")
        )
        print(f"zhixing: the team's set is up; to join it: export {shared}", flush=True)
        _wait_for_a_login(args.host, env)
        command = [sys.executable, "-m", "zhixing.cli.main", "serve", "--host", args.host]
        app = subprocess.Popen([*command, "--port", str(args.port)], env=env)
        stop = lambda *_: app.terminate()  # noqa: E731
        signal.signal(signal.SIGTERM, stop)
        try:
            return app.wait()
        except KeyboardInterrupt:
            app.terminate()
            return app.wait()


if __name__ == "__main__":
    sys.exit(main())
