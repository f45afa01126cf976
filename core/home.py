"""The home's privacy (docs/architecture.md §10): a Zhixing home is its owner's alone.

The home holds password hashes and restricted text (catalog.db), conversations, the debug log,
the vectors (milvus.db), staged uploads, unpacked workspaces and settings.json with the API key.
Every folder in it is made 0700 and every file 0600, whatever the umask: front ends set the
process umask to 0o077 when they open a home (`owner_only_umask`), files Zhixing opens itself
are created owner-only (`private_file`, `private_dir`), and a home made by an older Zhixing or
under a looser umask is tightened once when a service opens it (`tighten_home`).

This keeps other local users out. It is no boundary against someone who can read the home
(its owner, root, a backup): `zhixing mcp --user NAME` picks a role, it does not hide anything
from whoever holds the files.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["owner_only_umask", "private_dir", "private_file", "tighten", "tighten_home"]

_LOOSE = 0o077  # group and other bits: none of them stays on anything in the home


def owner_only_umask() -> None:
    """Make whatever this process creates from now on owner-only (0700 folders, 0600 files).

    For front ends (the CLI, the app, Studio), when they open a home: the process's children
    (Milvus Lite's server) inherit it, so their files are private too.
    """
    os.umask(_LOOSE)


def private_dir(path: Path) -> Path:
    """Make `path` (and its missing parents inside it) a folder only its owner may enter."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    tighten(path)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty and 0600 if it is missing, else take group/other bits off it, so a
    library that opens it next (SQLite) never writes it readable by others."""
    path = Path(path)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
    except OSError:
        return path  # a read-only home: the opener says why in its own sentence
    tighten(path)
    return path


def tighten(path: Path) -> None:
    """Take the group and other bits off one file or folder (never adding any owner bit: a
    read-only home stays read-only); a link is left alone, and so is a failure."""
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode) and mode & _LOOSE:
            os.chmod(path, stat.S_IMODE(mode) & ~_LOOSE)
    except OSError:
        pass  # not ours, gone, or a read-only mount: opening it says what is wrong


def tighten_home(home: Path) -> None:
    """Tighten the home and everything in it (one walk; links are not followed)."""
    home = Path(home)
    if not home.is_dir():
        return
    tighten(home)
    for root, dirs, files in os.walk(home):
        for name in (*dirs, *files):
            tighten(Path(root) / name)
