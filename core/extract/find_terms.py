"""Find the terms a sentence mentions: identifiers, acronyms, code names and noun phrases.

Each rule yields `Mention`s with a span in the sentence, a type from simple rules and a weight
(how specific the kind of term is: "CWE-79" beats "user input"). Identifiers and code names are
found first and claim their spans, so an acronym inside "CWE-79" or a noun phrase across it is
not found again. Chinese noun phrases come from jieba's part-of-speech tags (see `cjk`), English
ones from a head-noun rule and from capitalized phrases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from . import lexicon as lx
from .chinese_phrases import chinese_phrases
from .english_phrases import english_phrases
from .mention import Mention, normalize_entity_name, top_level

__all__ = ["Mention", "find_mentions", "normalize_entity_name", "top_level"]


def _attrs(**values: str) -> tuple[tuple[str, str], ...]:
    return tuple(values.items())


# (pattern, type, weight, name from the match, attributes from the match)
_Rule = tuple[
    re.Pattern[str],
    str,
    float,
    Callable[[re.Match[str]], str],
    Callable[[re.Match[str]], tuple[tuple[str, str], ...]],
]


def _ascii(pattern: str) -> re.Pattern[str]:
    # ASCII \b and \w: "参见CWE-79" has a word boundary before "CWE" (CJK is not a word char).
    return re.compile(pattern, re.ASCII)


def _as_written(found: re.Match[str]) -> str:
    return " ".join(found.group().split())


def _no_attrs(found: re.Match[str]) -> tuple[tuple[str, str], ...]:
    return ()


_IDENTIFIERS: list[_Rule] = [
    (
        _ascii(r"\bCWE[-‑ ]?(\d{1,5})\b"),
        "weakness",
        3.0,
        lambda m: f"CWE-{m.group(1)}",
        lambda m: _attrs(cwe=m.group(1)),
    ),
    (
        _ascii(r"\bCVE-(\d{4})-\d{4,7}\b"),
        "vulnerability",
        3.0,
        _as_written,
        lambda m: _attrs(year=m.group(1)),
    ),
    (_ascii(r"\bCAPEC-\d{1,5}\b"), "vulnerability", 3.0, _as_written, _no_attrs),
    (
        _ascii(r"\b(?:ASVS|MASVS)\s?V\d{1,2}(?:\.\d{1,3}){1,2}(?!\w|\.\d)"),
        "clause",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (
        _ascii(r"(?<![\w.])V\d{1,2}(?:\.\d{1,3}){1,2}(?!\w|\.\d)"),
        "clause",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (
        _ascii(r"\bGB(?:/[TZ])?\s?\d{4,6}(?:\.\d{1,3})*(?:\s?[-—–]\s?\d{4})?(?!\w|\.\d)"),
        "standard",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (
        _ascii(r"\bISO(?:/IEC)?\s?\d{3,5}(?:-\d{1,2})*(?::\d{4})?(?!\w|\.\d)"),
        "standard",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (
        _ascii(r"\b(?:NIST\s+)?SP\s?800-\d{1,3}[A-Z]?\b|\bNIST(?:\s+CSF)?\b"),
        "standard",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (_ascii(r"\bRFC\s?\d{3,5}\b"), "standard", 3.0, _as_written, _no_attrs),
    (
        _ascii(
            r"\b(?:ASVS|MASVS)(?:\s?v?\d\.\d(?:\.\d)?)?(?!\w|\.\d)"
        ),  # "ASVS 4.0.3" is a version
        "standard",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (_ascii(r"\bFIPS\s?\d{3}(?:-\d)?\b"), "standard", 3.0, _as_written, _no_attrs),
    (
        _ascii(r"\bPCI[\s-]DSS\b|\bOWASP\s+(?:Top\s+(?:10|Ten)|ASVS|MASVS|SAMM)\b"),
        "standard",
        3.0,
        _as_written,
        _no_attrs,
    ),
    (
        _ascii(
            r"\b(?:TLS|SSL|DTLS)\s?v?\d(?:\.\d)?\b|\bHTTP/\d(?:\.\d)?(?!\w|\.\d)|\bOAuth\s?\d\.\d\b"
            r"|\bSHA-?(?:1|224|256|384|512|3)\b|\bAES-?(?:128|192|256)\b|\bRSA-?\d{4}\b"
            r"|\bIPv[46]\b|\bHTML5\b|\bSAML\s?2\.0\b|\bPBKDF2\b|\bArgon2(?:id|i|d)?\b"
        ),
        "technology",
        2.5,
        _as_written,
        _no_attrs,
    ),
]
_TECH = re.compile(
    r"(?<![\w.])(?:"
    + "|".join(re.escape(n) for n in sorted(lx.TECH_NAMES, key=lambda n: (-len(n), n)))
    + r")(?![\w])",
    re.ASCII,
)
_CALL = re.compile(r"(?<![\w.$])(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*\(\)", re.ASCII)
_METHOD_CALL = re.compile(r"\.([a-z]+[A-Z][\w$]*)\s*\(", re.ASCII)
_DOTTED = re.compile(r"\b[A-Z][A-Za-z]+\.[a-z][A-Za-z]+\b|\b[a-z]{3,}\.[a-z]+[A-Z]\w*\b", re.ASCII)
_UPPER_CAMEL = re.compile(
    r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*)\b", re.ASCII
)
_LOWER_CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b", re.ASCII)
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", re.ASCII)
_CODE_TERM = re.compile(r"^[A-Za-z_$][\w$.:-]{2,39}(?:\(\))?$", re.ASCII)
_ACRONYM = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9]*[A-Z][A-Z0-9]*)(s?)(?![\w-])", re.ASCII)
# A Latin word that may open a Chinese compound ("SQL注入"); not "V5" of "V5 验证".
_LEVEL_TOKEN = re.compile(r"^L\d$")


def find_mentions(
    text: str, *, code: bool = False, code_terms: Sequence[str] = ()
) -> list[Mention]:
    """Find the terms of one segment (a sentence, row, heading or, with `code`, a code block)."""
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(m: Mention, claim: bool = True) -> None:
        if not any(m.start < end and start < m.end for start, end in taken):
            found.append(m)
            if claim:
                taken.append((m.start, m.end))

    if code:
        for m in _UPPER_CAMEL.finditer(text):
            add(Mention(m.group(), _camel_type(m.group()), m.start(), m.end(), 1.2))
        for m in _METHOD_CALL.finditer(text):
            add(Mention(f"{m.group(1)}()", "artifact", m.start(1), m.end(1), 1.2))
        return sorted(found, key=lambda m: (m.start, -m.end))
    for pattern, kind, weight, named, attrs in _IDENTIFIERS:
        for m in pattern.finditer(text):
            add(Mention(named(m), kind, m.start(), m.end(), weight, attributes=attrs(m)))
    for term in code_terms:
        if _CODE_TERM.match(term) and (term.lower() != term or re.search(r"[(_.\-]", term)):
            for m in re.finditer(re.escape(term), text):
                add(Mention(term, _camel_type(term), m.start(), m.end(), 2.0))
    for m in _TECH.finditer(text):
        # Claims no span: "XPath注入" and "JavaScript表达式" are terms that hold the name.
        add(Mention(m.group(), "technology", m.start(), m.end(), 2.0), claim=False)
    for pattern in (_CALL, _DOTTED, _UPPER_CAMEL, _LOWER_CAMEL, _SNAKE):
        for m in pattern.finditer(text):
            if m.group() not in lx.TECH_NAMES:
                add(Mention(m.group(), _camel_type(m.group()), m.start(), m.end(), 2.0))
    for m in _ACRONYM.finditer(text):
        name = m.group(1)
        if _acronym_ok(name, m.group(2)):
            kind = lx.ACRONYM_TYPES.get(name, "concept")
            # Everyday formats and protocols ("HTML", "JSON") say less than "XSS" or "OWASP".
            weight = {"technology": 1.2, "concept": 1.4}.get(kind, 2.0)
            # Acronyms claim no span: "SQL" is also part of "SQL injection" and "SQL注入".
            add(Mention(name, kind, m.start(1), m.end(1), weight), claim=False)
    strong = list(taken)
    for mention in english_phrases(text, strong) + chinese_phrases(text, strong):
        add(mention, claim=False)
    return _dedupe(found)


def _dedupe(mentions: list[Mention]) -> list[Mention]:
    best: dict[tuple[int, int], Mention] = {}
    for m in mentions:
        old = best.get((m.start, m.end))
        if old is None or m.weight > old.weight or (old.weak and not m.weak):
            best[(m.start, m.end)] = m
    return sorted(best.values(), key=lambda m: (m.start, -m.end))


def _acronym_ok(name: str, plural: str) -> bool:
    if name in lx.ACRONYM_STOP or _LEVEL_TOKEN.match(name) or sum(c.isalpha() for c in name) < 2:
        return False
    # Long all-capital words are emphasis ("STRONGLY DISCOURAGED") unless they are known.
    return (
        len(name) <= 5
        or name in lx.ACRONYM_TYPES
        or (plural == "" and any(c.isdigit() for c in name))
    )


def _camel_type(name: str) -> str:
    return "technology" if name in lx.TECH_NAMES else "artifact"
