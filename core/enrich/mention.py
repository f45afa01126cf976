"""A term found in a sentence (`Mention`), and the name key entities merge by."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CJK_CHARS", "Mention", "normalize_entity_name", "overlaps", "top_level"]


@dataclass(frozen=True, slots=True)
class Mention:
    """A term found in one segment, at text[start:end]."""

    name: str
    type: str
    start: int
    end: int
    weight: float
    weak: bool = False  # too generic to be an entity unless a relation pattern needs it
    attributes: tuple[tuple[str, str], ...] = ()


_NAME_SEPARATORS = re.compile(r"[\s\-_‐‑‒–—―·・]+")
CJK_CHARS = "\u3400-\u9fff\uf900-\ufaff"
_SPACE_BY_CJK = re.compile(rf"(?<=[{CJK_CHARS}]) | (?=[{CJK_CHARS}])")
_EDGE_PUNCT = "\"'“”‘’「」『』《》()（）[]【】<>.,;:!?。，；：！？、"


def normalize_entity_name(name: str) -> str:
    """Return the key that merges spellings of one entity: "SQL Injection", "sql-injection",
    "SQL  injection" and full-width "ＳＱＬ　Injection" all give "sql injection".

    NFKC (full-width to half-width), case folding, one space for runs of whitespace, hyphens and
    underscores, no space next to a CJK character ("SQL 注入" is "sql注入"), surrounding
    punctuation and a trailing "()" dropped. Nothing is translated.
    """
    key = unicodedata.normalize("NFKC", name).casefold().strip()
    key = key.strip(_EDGE_PUNCT + " ")
    key = key.removesuffix("()").strip()
    key = _NAME_SEPARATORS.sub(" ", key).strip()
    return _SPACE_BY_CJK.sub("", key)


def top_level(mentions: Sequence[Mention]) -> list[Mention]:
    """The mentions not inside a longer one, in text order: "SQL注入" rather than its "SQL"."""
    ordered = sorted(mentions, key=lambda m: (m.start, -(m.end - m.start), -m.weight))
    out: list[Mention] = []
    for m in ordered:
        if out and m.start < out[-1].end:
            continue
        out.append(m)
    return out


def overlaps(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether [start, end) overlaps any of `spans`."""
    return any(start < b and a < end for a, b in spans)
