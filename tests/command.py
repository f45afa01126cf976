"""The `zhixing` command in this process: `main(argv)` against a home, its output captured.

Tests of the command run it here, so they cost no interpreter start or model load per call;
a few end-to-end tests (tests/test_cli.py's first, test_cli_run.py, test_hostile_cli.py,
test_faults.py) still run it as a real process (`zhixing_process`, `run_python`).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from zhixing.cli.main import main

__all__ = ["ROOT", "Ran", "run_python", "zhixing", "zhixing_process", "zx"]

ROOT = Path(__file__).resolve().parents[1]

# Settings a developer's shell may carry that would take a test off its offline default.
_CLEARED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZHIXING_CHAT_MODEL", "ZHIXING_EMBEDDING")


@dataclass(frozen=True)
class Ran:
    """What a command left: its exit status and what it wrote (as `subprocess.run` reports)."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def zhixing(home: Path, *args: str, env: Mapping[str, str] | None = None) -> Ran:
    """Run `zhixing ARGS` with ZHIXING_HOME=home (offline unless `env` says otherwise)."""
    changes: dict[str, str | None] = {name: None for name in _CLEARED}
    changes |= {"ZHIXING_HOME": str(home), **(env or {})}
    out, err = io.StringIO(), io.StringIO()
    with _environment(changes), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help, or a usage error
            code = exc.code if isinstance(exc.code, int) else 1
    return Ran(code, out.getvalue(), err.getvalue())


def zx(home: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None) -> Ran:
    """`zhixing ARGS` in this process, offline; with `check`, a failure fails the test."""
    result = zhixing(home, *args, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"zhixing {' '.join(args)} failed:\n{result.stderr}")
    return result


def run_python(
    *args: str,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` as a real process in the repository root, its output captured as text."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        input=input,
        text=True,
        capture_output=True,
        timeout=timeout,
        check=check,
    )


def zhixing_process(
    home: Path,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """`zhixing ARGS` as a real process with ZHIXING_HOME=home, in this environment changed by
    `env` (a None removes a variable)."""
    environ = {**os.environ, "ZHIXING_HOME": str(home)}
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return run_python("-m", "zhixing.cli.main", *args, env=environ, timeout=timeout)
