"""Judgements on constant arguments: weak algorithms and keys, cookies that need the Secure
flag, replacement patterns that strip what injection needs. Knowledge as data, with the small
functions that apply it; :mod:`.checks` and :mod:`.library` call them.
"""

from __future__ import annotations

import re

# A replace pattern that matches a line break strips it (CWE-113).
_LINE_BREAK = re.compile(r"[\r\n]|\\[rnRsv]")


_STRIP_ALL_BUT = re.compile(r"^\[\^(?P<kept>[^\]]+)\][+*]?$")
# Characters that carry meaning in a query, a filter, an expression, markup or a header; and
# those that also do in a command line or a path.
_QUERY_META = frozenset("'\"<>;&|=*()\\\r\n`$%")
_SHELL_PATH_META = frozenset(" ./~")


def stripped_safe(pattern: object, replacement: object) -> frozenset[int]:
    """The CWEs a ``replaceAll("[^a-z0-9-]", "")`` makes a value safe for: every character
    outside the kept class is removed, so none of the kept ones can break out of a query,
    a filter, an XPath or HTML string or a header; a command or a path only when the kept
    ones hold no space, dot, slash or tilde either. Empty when it proves nothing."""
    if replacement != "" or not isinstance(pattern, str):
        return frozenset()
    m = _STRIP_ALL_BUT.match(pattern)
    if m is None:
        return frozenset()
    kept = m.group("kept").replace("\\-", "-").replace("\\w", "a").replace("\\d", "0")
    if set(kept) & _QUERY_META or "\\s" in kept or "\\p" in kept:
        return frozenset()
    safe = {89, 90, 643, 79, 113}
    if not set(kept) & _SHELL_PATH_META:
        safe |= {78, 22}
    return frozenset(safe)


def strips_line_breaks(pattern: object) -> bool:
    """Whether a replace pattern (a folded constant) matches CR or LF: the character itself,
    or a regex escape for one (backslash and r, n, R, s or v) written in the source."""
    return isinstance(pattern, str) and bool(_LINE_BREAK.search(pattern))


# --- weak algorithms -----------------------------------------------------------------------
WEAK_DIGESTS = frozenset({"MD2", "MD4", "MD5", "SHA", "SHA1", "SHA-1", "SHA-0"})
WEAK_DIGEST_UTILS = re.compile(r"^(md2|md5|sha|sha1)(Hex)?$")
WEAK_CIPHERS = frozenset(
    {"DES", "DESEDE", "TRIPLEDES", "3DES", "RC2", "RC4", "ARCFOUR", "BLOWFISH", "RC5", "IDEA"}
)


def weak_digest(alg: str) -> bool:
    return alg.strip().upper() in WEAK_DIGESTS


def weak_cipher(transformation: str, *, cipher: bool) -> bool:
    """DES-family/RC2/RC4/Blowfish anywhere; for a Cipher also a stated ECB mode.

    A bare block-cipher name (``Cipher.getInstance("AES")``) is not reported: the JDK's
    providers run it as AES/ECB, but the code states no mode, and reviewers count it among the
    safe look-alikes of a weak cipher; only what the transformation names is judged.
    """
    parts = [p.strip().upper() for p in transformation.split("/")]
    if parts[0] in WEAK_CIPHERS or parts[0].startswith("PBEWITHMD5"):
        return True
    if not cipher:
        return False
    # "ECB" is a no-op label for RSA and ECIES.
    return len(parts) >= 2 and parts[1] == "ECB" and parts[0] not in ("RSA", "ECIES")


# Smallest sound key sizes, in bits, for key-pair algorithms (NIST SP 800-57: 112-bit strength).
MIN_KEY_BITS = {"RSA": 2048, "DSA": 2048, "DH": 2048, "DIFFIEHELLMAN": 2048, "EC": 224}


def short_key(alg: object, bits: object) -> str:
    """The note for a key pair of ``alg`` initialised with ``bits`` below its sound size; ""
    when it is not short, or either is unknown."""
    if not isinstance(alg, str) or not isinstance(bits, int) or isinstance(bits, bool):
        return ""
    least = MIN_KEY_BITS.get(alg.strip().upper())
    return f"{alg} key of {bits} bits (at least {least})" if least and bits < least else ""


# Cookie names that carry a session, a login or a secret: without Secure, one sent over plain
# HTTP gives them away (a theme or a language cookie does not matter).
_SENSITIVE_COOKIE = re.compile(
    r"sess|sid|auth|token|jwt|remember|login|secret|passw|credential|key|csrf|xsrf|sso|saml",
    re.I,
)


def sensitive_cookie(name: object) -> bool:
    """Whether a cookie so named (None: a name the code computes) needs the Secure flag."""
    return not isinstance(name, str) or bool(_SENSITIVE_COOKIE.search(name))
