"""The file format of a whole-home backup (`zhixing backup` / `restore`): writing it, and
reading it back safely.

A zip file whose `manifest.json` names every other member with its size and sha256; a member
the manifest does not name, or whose bytes do not match it, makes the archive corrupt. Members
are never extracted by their own names: `extract_bundle` streams each named member into a file
of the caller's folder, counting and hashing as it goes, so nothing reaches the file system
under a name the archive chose. What the members hold is core/backup/snapshot.py's business.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zipfile
import zlib
from pathlib import Path
from typing import Any

from ..errors import ParseError, StoreError
from .archive import open_zip

__all__ = ["HOME_FORMAT", "HOME_FORMAT_VERSION", "extract_bundle", "read_manifest", "write_bundle"]

HOME_FORMAT = "zhixing-home"
HOME_FORMAT_VERSION = 1
_MANIFEST = "manifest.json"
# catalog.db, conversations.sqlite, settings.json and two vector members per knowledge base.
_MEMBER = re.compile(r"(catalog\.db|conversations\.sqlite|settings\.json|vectors/\d+\.(jsonl|npy))")
_MAX_MEMBERS = 4 + 2 * 10_000
_MAX_DIRECTORY_BYTES = 100 * _MAX_MEMBERS  # checked before zipfile reads the directory whole
_CHUNK = 1 << 20


def write_bundle(path: Path, manifest: dict[str, Any], members: dict[str, Path]) -> None:
    """Write `members` (archive name -> file) and the manifest, which gains each member's size
    and sha256; written beside `path` first, then moved in place: never a half file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    sums = {name: _digest(file) for name, file in members.items()}
    manifest = manifest | {"members": sums}
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
            zf.writestr(_MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2))
            for name, file in members.items():
                zf.write(file, name)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"The backup {path} cannot be written: {exc.strerror or exc}.") from exc


def _digest(file: Path) -> dict[str, Any]:
    sha = hashlib.sha256()
    with file.open("rb") as stream:
        while block := stream.read(_CHUNK):
            sha.update(block)
    return {"size": file.stat().st_size, "sha256": sha.hexdigest()}


def read_manifest(path: Path) -> dict[str, Any]:
    """The backup's manifest, once its zip directory, its member names and declared sizes are
    checked against it; ParseError, in one sentence, on anything amiss."""
    zf = _open(path)
    with zf:
        try:
            manifest = json.loads(zf.read(_MANIFEST).decode("utf-8"))
        except KeyError:
            raise ParseError(
                f"{path} is not a Zhixing home backup (it has no {_MANIFEST})."
            ) from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise ParseError(f"{path} is corrupt: its {_MANIFEST} cannot be read.") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != HOME_FORMAT:
            hint = " (a knowledge base's archive: use `zhixing import`)"
            hint = (
                hint
                if isinstance(manifest, dict) and manifest.get("format") == "zhixing-kb"
                else ""
            )
            raise ParseError(f"{path} is not a Zhixing home backup{hint}.")
        if manifest.get("version") != HOME_FORMAT_VERSION:
            raise ParseError(
                f"{path} has home backup format version {manifest.get('version')!r}; this"
                f" Zhixing reads version {HOME_FORMAT_VERSION} only."
            )
        members = manifest.get("members")
        infos = {i.filename: i for i in zf.infolist() if i.filename != _MANIFEST}
        if (
            not isinstance(members, dict)
            or "catalog.db" not in members
            or set(members) != set(infos)
            or len(infos) + 1 != len(zf.infolist())
            or any(not _MEMBER.fullmatch(name) for name in infos)
            or any(_declared(members[n]) != infos[n].file_size for n in infos)
        ):
            raise ParseError(f"{path} is corrupt: its members do not match its {_MANIFEST}.")
    return manifest


def _declared(entry: Any) -> int:
    size = entry.get("size") if isinstance(entry, dict) else None
    return size if type(size) is int and size >= 0 else -1


def extract_bundle(path: Path, manifest: dict[str, Any], into: Path) -> dict[str, Path]:
    """Stream every member the manifest names into the folder `into`, checking its size and
    sha256; return archive name -> file. The caller made `into` and removes it on failure."""
    members: dict[str, Any] = manifest["members"]
    need = sum(_declared(m) for m in members.values())
    free = shutil.disk_usage(into).free
    if need > free:
        raise StoreError(
            f"Restoring {path} needs {need >> 20} MiB and the disk holding {into} has"
            f" {free >> 20} MiB free; free some space, then run the command again."
        )
    out: dict[str, Path] = {}
    with _open(path) as zf:
        for name, entry in members.items():
            target = into / name.replace("/", "_")  # our name for it, in our folder
            sha = hashlib.sha256()
            try:
                with zf.open(name) as stream, target.open("wb") as sink:
                    while block := stream.read(_CHUNK):
                        sha.update(block)
                        sink.write(block)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                raise ParseError(f"{path} is corrupt or truncated: {name} cannot be read.") from exc
            if sha.hexdigest() != entry.get("sha256"):
                raise ParseError(f"{path} is corrupt: {name} does not match its checksum.")
            out[name] = target
    return out


def _open(path: Path) -> zipfile.ZipFile:
    return open_zip(
        path,
        "a Zhixing home backup",
        "backup",
        max_entries=_MAX_MEMBERS,
        max_directory_bytes=_MAX_DIRECTORY_BYTES,
    )
