"""A term found in a sentence (`Mention`); the name key entities merge by is core/text/entity_names.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..text.chinese import CJK_CHARS
from ..text.entity_names import normalize_entity_name

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
