"""The `grounded_answer` role's text (core/answer.py): the variables it is sent, the not-found
sentence it is told to write (the one the extractive answer writes too), and its [n] citation
markers, numbered as the final answer numbers them while the reply streams.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .models import Hit
from .text.language import is_chinese

__all__ = [
    "MARKER",
    "NOT_FOUND_EN",
    "NOT_FOUND_ZH",
    "LiveAnswer",
    "grounded_answer_variables",
    "says_not_found",
]

NOT_FOUND_ZH = "未在知识库中找到相关信息"
NOT_FOUND_EN = "No relevant information was found in the knowledge base."

_HIT_CHARS = 2000  # per hit in the prompt; chunks are bounded already, this is a guard

# A citation marker and the space before it: "[3]", " [1, 2]", "[1，2]".
MARKER = re.compile(r"\s*\[(\d+(?:\s*[,，]\s*\d+)*)\]")


class LiveAnswer:
    """The answer as the model writes it, numbered as `grounded_answer` will number it.

    The final numbering is the order in which the text first cites each valid hit, so the
    markers written so far can be numbered now; a marker still open ("[3") waits to close.
    """

    def __init__(self, hits: int, max_citations: int, on_text: Callable[[str], None]) -> None:
        self._hits = hits
        self._max = max_citations
        self._on_text = on_text
        self._shown = ""

    def update(self, partial: dict[str, Any]) -> None:
        text = partial.get("answer")
        if partial.get("found") is False or not isinstance(text, str):
            return
        if any(sentence.startswith(text.strip()) for sentence in (NOT_FOUND_ZH, NOT_FOUND_EN)):
            return  # the not-found sentence being written: the final answer decides what shows
        opened = text.rfind("[")
        if opened > text.rfind("]"):
            text = text[:opened]
        numbered = self._numbered(text).strip()
        if numbered and numbered != self._shown:
            self._shown = numbered
            self._on_text(numbered)

    def _numbered(self, text: str) -> str:
        order: dict[int, int] = {}

        def rewrite(match: re.Match[str]) -> str:
            kept = []
            for n in dict.fromkeys(int(x) for x in re.split(r"[,，]", match.group(1))):
                if not 1 <= n <= self._hits:
                    continue
                if n not in order and len(order) < self._max:
                    order[n] = len(order) + 1
                if n in order:
                    kept.append(order[n])
            lead = match.group(0)[: len(match.group(0)) - len(match.group(0).lstrip())]
            return lead + "".join(f"[{k}]" for k in kept) if kept else ""

        return MARKER.sub(rewrite, text)


def grounded_answer_variables(question: str, hits: Sequence[Hit]) -> dict[str, object]:
    """Build the variables of the `grounded_answer` role: the question and the numbered hits."""
    chinese = is_chinese(question)
    blocks = []
    for n, hit in enumerate(hits, start=1):
        text = " ".join(hit.text.split())[:_HIT_CHARS]
        blocks.append(f"[{n}] {hit.document} p.{hit.page}: {text}")
    return {
        "question": question,
        "hits": "\n\n".join(blocks),
        "language": "Chinese" if chinese else "English",
        "not_found": NOT_FOUND_ZH if chinese else NOT_FOUND_EN,
    }


def says_not_found(text: str) -> bool:
    """Whether an answer is the not-found sentence, whatever markers or stops surround it."""
    bare = MARKER.sub("", text).strip().rstrip("。.").casefold()
    return bare in {NOT_FOUND_ZH.rstrip("。.").casefold(), NOT_FOUND_EN.rstrip("。.").casefold()}
