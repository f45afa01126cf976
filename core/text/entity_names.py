"""The key entities merge by: one spelling for "SQL Injection", "sql-injection" and "ＳＱＬ　Injection"."""

from __future__ import annotations

import re
import unicodedata

from .chinese import CJK_CHARS

__all__ = ["normalize_entity_name"]

_NAME_SEPARATORS = re.compile(r"[\s\-_‐‑‒–—―·・]+")
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
