"""Turn a user-given file name into a safe display and source name."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["sanitize_name"]

_MAX_CHARS = 200
_MAX_BYTES = 240  # file systems cap a name at 255 bytes; leave room for a suffix
_SPACE = re.compile(r"\s+")
# Bidirectional overrides can make "gpj.exe" display as "exe.jpg"; they have no place in a name.
_BIDI = dict.fromkeys(
    map(ord, "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
)
# Device names Windows opens instead of a file, with any extension ("con.txt" is the console):
# a knowledge base exported or synced to a Windows machine must not carry them.
_RESERVED = {"con", "prn", "aux", "nul", "conin$", "conout$"} | {
    f"{d}{i}" for d in ("com", "lpt") for i in (*"123456789", "¹", "²", "³")
}


def sanitize_name(name: str) -> str:
    """Return the base name of `name`, cleaned for display: never empty, at most ~200 characters.

    Directories (``a/b``, ``..\\x``) are dropped, control characters removed, whitespace
    collapsed, trailing dots and spaces cut (Windows drops them), and a Windows device name
    (``CON``, ``nul.txt``, ``COM1``) gets a leading ``_``; Unicode is kept (``中文.pdf`` stays
    ``中文.pdf``). HTML-looking characters are kept too: pages escape names when they show them.
    """
    base = unicodedata.normalize("NFC", str(name)).replace("\\", "/").split("/")[-1]
    base = "".join(
        c for c in base.translate(_BIDI) if unicodedata.category(c) != "Cc" or c in "\t\n"
    )
    base = _SPACE.sub(" ", base).strip().rstrip(". ")
    if not base.strip("."):
        return "unnamed"
    if base.split(".")[0].rstrip().casefold() in _RESERVED:
        base = f"_{base}"
    return _truncate(base)


def _truncate(name: str) -> str:
    if len(name) <= _MAX_CHARS and len(name.encode("utf-8")) <= _MAX_BYTES:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) > 16:
        stem, ext = name, ""
    suffix = f".{ext}" if ext else ""
    while stem and (
        len(stem) + len(suffix) > _MAX_CHARS or len((stem + suffix).encode("utf-8")) > _MAX_BYTES
    ):
        stem = stem[:-1]
    return (stem.rstrip(". ") or "unnamed") + suffix
