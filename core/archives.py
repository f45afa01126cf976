"""Untrusted archives read from their raw headers, before any library loads them whole.

`zipfile` reads a zip's whole central directory when it opens one, and `tarfile` reads a GNU
long name or a pax record whole while it lists members: a 778 KB tar whose first header
declared a name of hundreds of megabytes took 6.4 GB. So a zip is first judged by its end of
central directory record (entry count and directory size, zip64 included), and a tar by a walk
of its 512-byte headers through the decompressor, which refuses an oversized long-name or pax
record before reading it and counts members and bytes as they stream. Both raise `AccessError`
with one sentence that quotes at most a short, escaped part of any name (`shown`).

Used by the task agent's workspace (core/unpack.py) and by `zhixing import` (core/backup).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
from pathlib import Path
from typing import IO, Literal, cast

from .errors import AccessError

__all__ = [
    "MAX_NAME_BYTES",
    "NotAZipFile",
    "MAX_PAX_BYTES",
    "TarMode",
    "check_zip_directory",
    "open_tar_stream",
    "shown",
    "walk_tar",
]

MiB = 1024 * 1024
MAX_NAME_BYTES = 1024  # one entry's path; Linux allows 4096, no project needs a quarter of it
MAX_PAX_BYTES = 64 * 1024  # one pax record: a path, times, owner, a few extended attributes
_MAX_META_IN_ROW = 8  # long-name and pax records before one member
_BLOCK = 512
_SHOWN_CHARS = 48

_EOCD = struct.Struct("<4s4H2LH")  # signature, disks, entries here, entries, size, offset, comment
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")


class NotAZipFile(AccessError):
    """The file has no end of central directory record: not a zip file, or a truncated one."""


def shown(name: str, limit: int = _SHOWN_CHARS) -> str:
    """Quote a name for a sentence as `repr` would (control characters, quotes and backslashes
    escaped), cut to at most `limit` characters inside the quotes."""
    text = "".join(c if c.isprintable() and c not in "\\'" else _escaped(c) for c in name)
    return f"'{text}'" if len(text) <= limit else f"'{text[: limit - 1]}…'"


def _escaped(char: str) -> str:
    return "\\'" if char == "'" else repr(char)[1:-1]


def _human(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:g} MiB"
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} bytes"


# --- zip ---------------------------------------------------------------------------------------


def check_zip_directory(
    path: Path, label: str, *, max_entries: int, max_directory_bytes: int
) -> int:
    """Read the end of central directory record; refuse too many entries or too big a
    directory before `zipfile` reads it. Return the declared entry count."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        tail_start = max(0, size - (_EOCD.size + 0xFFFF))
        fh.seek(tail_start)
        tail = fh.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < _EOCD.size:
            raise NotAZipFile(f"{label} could not be unpacked: not a zip file, or truncated.")
        fields = _EOCD.unpack_from(tail, at)
        entries, directory = int(fields[4]), int(fields[5])
        locator = tail_start + at - _ZIP64_LOCATOR.size
        if locator >= _ZIP64_EOCD.size:
            fh.seek(locator)
            if fh.read(4) == b"PK\x06\x07":
                # zipfile reads the zip64 record just before its locator, as done here.
                fh.seek(locator - _ZIP64_EOCD.size)
                record = fh.read(_ZIP64_EOCD.size)
                if len(record) < _ZIP64_EOCD.size or not record.startswith(b"PK\x06\x06"):
                    raise AccessError(f"{label} is a corrupt zip file (its zip64 record).")
                fields = _ZIP64_EOCD.unpack(record)
                entries, directory = int(fields[7]), int(fields[8])
    if entries > max_entries:
        raise AccessError(
            f"{label} has more than {max_entries} entries ({entries} in its central directory);"
            " it was not opened."
        )
    if directory > max_directory_bytes:
        raise AccessError(
            f"{label} declares a central directory of {_human(directory)}, more than"
            f" {_human(max_directory_bytes)}; it was not opened."
        )
    return entries


# --- tar ---------------------------------------------------------------------------------------


TarMode = Literal["r:gz", "r:bz2", "r:xz", "r:"]


def open_tar_stream(path: Path) -> tuple[IO[bytes], TarMode]:
    """Open a tar's decompressed bytes (gzip, bzip2, xz or none, told by its magic bytes);
    return the stream and the `tarfile` mode that reads the same."""
    with open(path, "rb") as fh:
        magic = fh.read(6)
    stream: gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile | None = None
    mode: TarMode = "r:"
    if magic.startswith(b"\x1f\x8b"):
        stream, mode = gzip.GzipFile(path, "rb"), "r:gz"
    elif magic.startswith(b"BZh"):
        stream, mode = bz2.BZ2File(path, "rb"), "r:bz2"
    elif magic.startswith(b"\xfd7zXZ\x00"):
        stream, mode = lzma.LZMAFile(path, "rb"), "r:xz"  # noqa: SIM115 - returned open
    if stream is not None:
        try:
            stream.peek(1)
            return cast(IO[bytes], stream), mode
        except (OSError, EOFError, lzma.LZMAError):
            stream.close()  # a plain tar whose first name starts with these bytes
    return open(path, "rb"), "r:"


def walk_tar(stream: IO[bytes], label: str, *, max_entries: int, max_bytes: int) -> int:
    """Walk the headers as `tarfile` would; refuse oversized records before reading them, and
    more than `max_entries` members or `max_bytes` of content. Return the member count."""
    entries = total = meta = 0
    global_size: int | None = None
    next_size: int | None = None
    while True:
        header = stream.read(_BLOCK)
        if len(header) < _BLOCK or header == bytes(_BLOCK):
            return entries  # the end (tarfile stops here too; a short block is its ReadError)
        kind = header[156:157]
        size = _number(header[124:136], label)
        _check_sum(header, label)
        if kind in (b"L", b"K", b"x", b"g", b"X"):
            meta += 1
            bound = MAX_NAME_BYTES if kind in (b"L", b"K") else MAX_PAX_BYTES
            if meta > _MAX_META_IN_ROW:
                raise AccessError(
                    f"{label} was refused: more than {_MAX_META_IN_ROW} long-name or pax records"
                    " precede one entry."
                )
            if size > bound + 1:  # + 1: a long name ends in NUL
                raise AccessError(
                    f"{label} was refused: a header declares {_human(size)} of metadata (a long"
                    f" name or a pax record; at most {_human(bound)})."
                )
            data = _read(stream, size, label)
            total += size
            if kind in (b"L", b"K") and len(data.rstrip(b"\0")) > MAX_NAME_BYTES:
                raise AccessError(
                    f"{label} was refused: a name is longer than {MAX_NAME_BYTES} bytes."
                )
            if kind != b"L" and kind != b"K":
                declared = _pax_size(data, label)
                if kind == b"g" and declared is not None:
                    global_size = declared
                elif declared is not None:
                    next_size = declared
            continue
        meta = 0
        entries += 1
        if entries > max_entries:
            raise AccessError(
                f"{label} has more than {max_entries} entries; unpack a smaller project."
            )
        if kind == b"S":
            raise AccessError(f"{label} was refused: it holds a sparse file.")
        size = (
            next_size if next_size is not None else global_size if global_size is not None else size
        )
        next_size = None
        if kind in (b"1", b"2", b"3", b"4", b"5", b"6"):
            continue  # links, devices, folders, fifos: tarfile reads no data after them
        total += size
        if total > max_bytes:
            raise AccessError(
                f"{label} unpacks to more than {_human(max_bytes)}; unpack a smaller project."
            )
        _skip(stream, size + -size % _BLOCK)


def _number(field: bytes, label: str) -> int:
    """A header number as tarfile reads it: octal text, or base-256 (GNU) when flagged."""
    if field[:1] in (b"\x80", b"\xff"):
        if field[:1] == b"\xff":
            raise AccessError(f"{label} is a corrupt tar file (a negative size).")
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip() or b"0"
    try:
        return int(text, 8)
    except ValueError:
        raise AccessError(f"{label} is a corrupt tar file (a header is unreadable).") from None


def _check_sum(header: bytes, label: str) -> None:
    stored = _number(header[148:156], label)
    unsigned = sum(header[:148]) + 8 * 0x20 + sum(header[156:])
    signed = (
        sum(struct.unpack("148b", header[:148])) + 256 + sum(struct.unpack("356b", header[156:]))
    )
    if stored not in (unsigned, signed):
        raise AccessError(f"{label} is a corrupt tar file (a header's checksum is wrong).")


def _pax_size(data: bytes, label: str) -> int | None:
    """The `size` a pax record sets, if any; refuse a path or link name over the bound."""
    size = None
    pos = 0
    while pos < len(data) and data[pos : pos + 1] != b"\0":
        space = data.find(b" ", pos)
        try:
            length = int(data[pos:space]) if space > pos else 0
        except ValueError:
            length = 0
        if length <= 0:
            raise AccessError(f"{label} is a corrupt tar file (a pax record is unreadable).")
        record = data[space + 1 : pos + length].rstrip(b"\n")
        key, _, value = record.partition(b"=")
        if key in (b"path", b"linkpath") and len(value) > MAX_NAME_BYTES:
            raise AccessError(f"{label} was refused: a name is longer than {MAX_NAME_BYTES} bytes.")
        if key == b"size":
            try:
                size = int(value)
            except ValueError:
                raise AccessError(f"{label} is a corrupt tar file (a pax size).") from None
        pos += length
    return size


def _read(stream: IO[bytes], size: int, label: str) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise AccessError(f"{label} is a truncated tar file.")
    _skip(stream, -size % _BLOCK)
    return data


def _skip(stream: IO[bytes], size: int) -> None:
    """Skip `size` bytes (read through a decompressor, which cannot seek)."""
    while size > 0:
        chunk = stream.read(min(size, MiB))
        if not chunk:
            return  # truncated: the next header read sees the end
        size -= len(chunk)
