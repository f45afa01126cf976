"""Which quoted lines an answer does not say already, and renumbering their citation markers.

A model's answer stands beside the extractive answer (core/answer.py): the lines of the
extractive answer ("- sentence [n]") that the model's text does not already hold are shown
under it as quotes. "Holds" is measured on character bigrams of letters, digits and CJK
ideographs (case folded), so a model that copied a sentence with other punctuation or spacing
is not quoted twice, and a number or name the model left out makes its sentence stay.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .chinese import CJK_CHARS

__all__ = ["HELD_SHARE", "renumber", "unsaid"]

# The share of a sentence's bigrams an answer must hold for the sentence to count as said: a
# paraphrase keeps its key words and drops connectives, so well under all, well over half.
HELD_SHARE = 0.8

_KEPT = re.compile(rf"[0-9A-Za-z{CJK_CHARS}]+")
_MARKER = re.compile(r"\[(\d+)\]")
_ITEM = re.compile(r"^- (.*?)\s*((?:\[\d+\])+)$")


def _bigrams(text: str) -> set[str]:
    flat = "".join(_KEPT.findall(text.casefold()))
    return {flat[i : i + 2] for i in range(len(flat) - 1)} or ({flat} if flat else set())


def unsaid(lines: Sequence[str], said: str) -> str:
    """The list items of `lines` ("- sentence [n]") whose sentence `said` does not hold, each
    under the label line above it, a label opening a paragraph of its own (a label with no
    item left is dropped, and so are other lines); "" when `said` holds them all."""
    held = _bigrams(said)
    out: list[str] = []
    label = ""
    for line in lines:
        item = _ITEM.match(line.strip())
        if item is None:
            label = line.strip() if line.strip().endswith((":", "：")) else ""
            continue
        grams = _bigrams(item.group(1))
        if grams and len(grams & held) >= HELD_SHARE * len(grams):
            continue
        if label:
            out.extend([""] * bool(out) + [label])
            label = ""
        out.append(line.strip())
    return "\n".join(out)


def renumber(text: str, number: Callable[[int], int]) -> str:
    """`text` with each citation marker [n] written as [number(n)]."""
    return _MARKER.sub(lambda m: f"[{number(int(m.group(1)))}]", text)
