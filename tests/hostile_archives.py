"""Hostile archives built in the test, small on disk and huge once read (issue 33).

`long_name_tar`: a .tar.gz whose first header is a GNU long-name record ('L') or a pax record
('x') declaring hundreds of megabytes, which really follow: 1 MiB of 'a' compresses to about
1 KB, and gzip members may be concatenated, so 600 MiB cost 600 copies of one member. `tarfile`
read the whole record while listing members (6.4 GB for such a name at 4d2a7e4).

`wide_zip`: a zip whose central directory holds `entries` records that all point at one local
file: a few bytes each, and every one a `ZipInfo` once `zipfile` opens it.
"""

from __future__ import annotations

import gzip
import struct
import tarfile
import zlib
from pathlib import Path

__all__ = ["MiB", "long_name_tar", "wide_zip"]

MiB = 1024 * 1024


def _header(name: str, kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def _pax_prefix(size: int) -> bytes:
    """The start of one pax record `LEN path=aaa…\\n` that is `size` bytes long in all."""
    return f"{size} path=".encode()


def long_name_tar(path: Path, kind: bytes = b"L", declared: int = 600 * MiB) -> Path:
    """Write the archive; `kind` b"L" (GNU long name) or b"x" (pax); return its path."""
    head = _header("././@LongLink" if kind == b"L" else "././@PaxHeader", kind, declared)
    body = _pax_prefix(declared) if kind == b"x" else b""
    megabyte = gzip.compress(b"a" * MiB, compresslevel=9, mtime=0)
    left = declared - len(body) - (1 if kind == b"x" else 0)
    with open(path, "wb") as out:
        out.write(gzip.compress(head + body, mtime=0))
        while left >= MiB:
            out.write(megabyte)
            left -= MiB
        tail = b"a" * left + (b"\n" if kind == b"x" else b"")
        tail += bytes(-declared % 512)
        data = b"class A {}\n"
        tail += _header("A.java", tarfile.REGTYPE, len(data)) + data + bytes(-len(data) % 512)
        out.write(gzip.compress(tail + bytes(1024), mtime=0))
    return path


def wide_zip(path: Path, entries: int) -> Path:
    """Write a zip of one stored file and `entries` central-directory records naming it."""
    name = b"a"
    data = b"x"
    crc = zlib.crc32(data)
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, 1, 1, len(name), 0)
    record = struct.pack(
        "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, 1, 1, len(name), 0, 0, 0, 0, 0, 0
    )
    directory = (record + name) * entries
    offset = len(local) + len(name) + len(data)
    end = struct.pack(
        "<4s4H2LH",
        b"PK\x05\x06",
        0,
        0,
        min(entries, 0xFFFF),
        min(entries, 0xFFFF),
        len(directory),
        offset,
        0,
    )
    path.write_bytes(local + name + data + directory + end)
    return path
