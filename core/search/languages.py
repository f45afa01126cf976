"""Dense search over a knowledge base of two languages (issue 37): each language gets its turn.

The built-in multilingual model places a text nearer to texts in its own language: over English
cheat sheets beside the Chinese ASVS, "session tokens" ranks every English chunk on sessions
above chapter V3 (its first chunk 39th), though among the Chinese chunks alone V3 comes first.
BM25 cannot see the other language at all, and when it matches the question in its own
language the fusion gives dense little vote (core/search/fusion.py). So where the dense
search's reach holds both languages, the other language's best chunks take fixed places in the
fused list (`OTHER_RANKS`), the way a document the top hit names takes rank 5 (`link_at`): the
first five stay as fused, and the evidence holds a passage an answer in the other language can
come from.

An acronym is written alike in both languages, so it outweighs the rest of a question across
them: "What does ASVS require for session tokens?" finds the Chinese chapters that say "ASVS"
(the preface, how to use the standard), not V3. The other language's search leaves such names
out when the question keeps two key terms without them; BM25 and the fused dense list still
match them as written. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..text.language import is_chinese_prose
from .fusion import Fused
from .query_terms import key_terms

__all__ = ["OTHER_RANKS", "OTHER_REACH", "give_places", "in_chinese", "without_names"]

# How deep the other language's dense search reaches for its best chunks: in that knowledge
# base, V3's first chunk for "session tokens" was 39th of all; 100 holds the first ten of a
# language that makes up a fifth of the chunks.
OTHER_REACH = 100
# Where the other language's first and second chunks stand in the fused list (1-based): after
# the first five, which stay as the fusion ranked them, and last of the ten the pages show.
OTHER_RANKS = (6, 10)
_NAME = re.compile(r"\b[A-Z][A-Z0-9]{2,}s?\b")  # ASVS, OWASP, CSP, JWTs


def in_chinese(text: str) -> bool:
    """Whether a chunk is Chinese: as many CJK characters as Latin words, or more
    (core/text/language.py `is_chinese_prose`)."""
    return is_chinese_prose([text])


def without_names(question: str) -> str:
    """The question without its acronyms, where two key terms stay; else as it is."""
    bare = " ".join(_NAME.sub(" ", question).split())
    return bare if bare != question and len(key_terms(bare)) >= 2 else question


def give_places(fused: Sequence[Fused[int]], other: Sequence[int], top_k: int) -> list[Fused[int]]:
    """The other language's best chunks at `OTHER_RANKS` (those within `top_k`), each unless
    it is among the first `top_k` already. Its provenance is {"other language": n}."""
    out = list(fused)
    for n, (rank, chunk) in enumerate(zip(OTHER_RANKS, other, strict=False), start=1):
        if rank > top_k or chunk in {f.item for f in out[:top_k]}:
            continue
        rest = [f for f in out[rank - 1 :] if f.item != chunk]
        # The score of what stands just before it: the fusion gave it none of its own.
        score = out[min(rank - 1, len(out)) - 1].score if out else 0.0
        out = [*out[: rank - 1], Fused(chunk, score=score, ranks={"other language": n}), *rest]
    return out
