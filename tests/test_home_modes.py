"""The home is its owner's alone (docs/architecture.md §10): made under umask 022 by the
`zhixing` command and by a library host, every folder in it is 0700 and every file 0600 or
tighter, and a home an older Zhixing left 0755/0644 is tightened when it is next opened."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.command import zx

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.process

DOC = "# Vault\n\nThe vault key rotates weekly. Passwords are hashed with bcrypt.\n"

# One real process started under umask 022, as a user's shell starts one. First the `zhixing`
# command four times, each entered under umask 022 again (as a new process would be; the
# command tightens its own), the last exporting into the home. Then a library host (a LangChain
# app, Studio) that opens the home under its umask 022: a user (a password hash in catalog.db),
# a conversation (conversations.sqlite), saved settings, a staged upload and a task workspace.
# In one process: each `zhixing` process costs seconds.
MADE = """
import os, sys, time
from pathlib import Path
from zhixing.cli.main import main
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

home, doc, workspace = (Path(arg) for arg in sys.argv[1:4])
for command in (
    ["kb", "create", "vault"],
    ["add", "vault", str(doc)],
    ["run", "vault", "Which hash stores passwords?", "--workspace", str(workspace)],
    ["export", "vault", str(home / "vault-backup.zip")],
):
    os.umask(0o022)
    assert main(command) == 0, command
os.umask(0o022)
with KnowledgeService(Settings(home=home)) as svc:
    svc.users.add("alice", "viewer", "a long password")
    talk = svc.conversations.new()
    svc.search.ask("How often does the vault key rotate?", ["vault"], conversation=talk.id)
    svc.admin.save_settings({"ZHIXING_CHAT_MODEL": "qwen2.5"})
    job = svc.builds.start("vault", uploads=[("notes.md", b"# Notes\\n\\nRotate keys weekly.\\n")])
    while svc.builds.job(job.id).state not in ("done", "failed", "cancelled"):
        time.sleep(0.2)
    svc.tasks.run("Which hash stores passwords?", ["vault"], upload=("ws.zip", workspace.read_bytes()))
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    return {**env, "ZHIXING_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`args` in a real process started with umask 022, as a user's shell starts it."""
    ran = subprocess.run(
        args,
        cwd=ROOT,
        env=_env(home),
        text=True,
        capture_output=True,
        timeout=300,
        check=False,
        umask=0o022,
    )
    assert ran.returncode == 0, ran.stderr
    return ran


def _zhixing(home: Path, *args: str) -> None:
    _run(home, sys.executable, "-m", "zhixing.cli.main", *args)


def _loose(home: Path) -> list[str]:
    """Every path in the home that a group or other user could read, write or enter."""
    paths = [home, *home.rglob("*")]
    return [
        f"{oct(stat.S_IMODE(p.lstat().st_mode))} {p.relative_to(home.parent)}"
        for p in paths
        if stat.S_IMODE(p.lstat().st_mode) & 0o077
    ]


def _workspace_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("src/Login.java", 'class Login { String hash = "md5"; }\n')
    return out.getvalue()


def test_a_home_made_under_umask_022_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    doc = tmp_path / "vault.md"
    doc.write_text(DOC, encoding="utf-8")
    workspace = tmp_path / "ws.zip"
    workspace.write_bytes(_workspace_zip())
    _run(home, sys.executable, "-c", MADE, str(home), str(doc), str(workspace))
    made = {p.relative_to(home).as_posix() for p in home.rglob("*")}
    for expected in (
        "catalog.db",
        "conversations.sqlite",
        "logs/zhixing.log",
        "milvus.db",
        "settings.json",
        "vault-backup.zip",
        "uploads",
        "runs",
    ):
        assert expected in made, sorted(made)
    assert len(made) > 15  # Milvus Lite's own folders and files are walked too
    assert _loose(home) == []


def test_an_existing_home_left_0755_and_0644_is_tightened_when_it_is_opened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    doc = tmp_path / "vault.md"
    doc.write_text(DOC, encoding="utf-8")
    zx(home, "kb", "create", "vault")  # made in this process: only the reopening must be real
    zx(home, "add", "vault", str(doc))
    for path in [home, *home.rglob("*")]:  # as an older Zhixing left it under umask 022
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert len(_loose(home)) > 5
    _zhixing(home, "kb", "list")
    assert _loose(home) == []
