"""Decode text files of unknown encoding, and tell text from binary content."""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

__all__ = ["decode_text", "looks_binary", "normalize_newlines"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Encodings the fallback may pick. Anything else it proposes for a Chinese or English document
# is almost always a misdetection of one of these.
_CJK_CANDIDATES = ("gb18030", "big5", "utf_16_le", "utf_16_be", "shift_jis", "euc_kr")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _bom_encoding(data: bytes) -> str | None:
    return next((enc for bom, enc in _BOMS if data.startswith(bom)), None)


def _utf16_without_bom(data: bytes) -> str | None:
    """Spot BOM-less UTF-16 by its zero bytes, which sit in every other position."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    half = len(sample) / 2
    if odd > 0.3 * half and even < 0.05 * half:
        return "utf-16-le"
    if even > 0.3 * half and odd < 0.05 * half:
        return "utf-16-be"
    return None


def looks_binary(head: bytes) -> bool:
    """Tell whether the first bytes of a file are binary rather than text in some encoding."""
    if not head or _bom_encoding(head) or _utf16_without_bom(head):
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls > 0.05 * len(head)


def decode_text(data: bytes) -> str | None:
    """Decode bytes as text: BOM, then strict UTF-8, then a detected CJK or legacy encoding.

    Returns None when no encoding gives plausible text.
    """
    encoding = _bom_encoding(data) or _utf16_without_bom(data)
    if encoding:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return _detected(data)


def _detected(data: bytes) -> str | None:
    matches = from_bytes(data[:200_000])
    best = matches.best()
    ordered = [best] if best is not None else []
    ordered += [m for m in matches if m is not best]
    for match in ordered:
        encoding = match.encoding
        if encoding.startswith(("cp125", "iso8859", "latin")):
            # Short Western text fits several single-byte code pages; Windows-1252 is by far
            # the most common one in English and Western European documents.
            encoding = "cp1252" if _decodes(data, "cp1252") else encoding
        elif encoding not in _CJK_CANDIDATES:
            continue
        if _decodes(data, encoding):
            return data.decode(encoding)
    # charset_normalizer can give up on short samples; GB18030 decodes most Chinese text.
    try:
        return data.decode("gb18030")
    except UnicodeDecodeError:
        return None


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def normalize_newlines(text: str) -> str:
    """Use \\n line ends, drop a BOM and control characters (they break JSON, XML and display)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)
