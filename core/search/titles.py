"""Documents a question names: the `graph` strategy's most direct link.

A document's title names its subject ("Haymo of Faversham", "GB/T 34944-2017 ..."), so a question
that spells out a title is about that document, however little of its wording the passage shares
with the question. BM25 sees the name as a few ordinary terms and the dense vector barely at all
(hotpotqa-100: the passage titled "Haymo of Faversham" is BM25's first hit but the dense
search's 42nd). Linking by title is exact and cheap: one scan of the titles of the knowledge
bases in scope, cached until their documents change.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from core.models import KnowledgeBase
from core.store import Catalog

__all__ = ["TitleIndex"]

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+|[^\W_]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_MIN_LATIN = 4  # "Sulli" names a person; "AI" or "Go" would name too much
_MIN_CJK = 2
MAX_NAMED = 10


class TitleIndex:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._lock = threading.Lock()
        self._cache: dict[int, tuple[tuple[int, int, int], list[tuple[str, bool, int]]]] = {}

    def named(self, query: str, kbs: Sequence[KnowledgeBase]) -> list[int]:
        """Lead chunks of the documents whose title the query names, the longest title first."""
        padded, compact = _forms(query)
        found: list[tuple[int, int]] = []
        for kb in kbs:
            for title, cjk, chunk_id in self._titles(kb.id):
                if (title in compact) if cjk else (f" {title} " in padded):
                    found.append((len(title), chunk_id))
        found.sort(key=lambda f: (-f[0], f[1]))
        return [chunk_id for _, chunk_id in found[:MAX_NAMED]]

    def _titles(self, kb_id: int) -> list[tuple[str, bool, int]]:
        version = self.catalog.documents_version(kb_id)
        with self._lock:
            cached = self._cache.get(kb_id)
            if cached and cached[0] == version:
                return cached[1]
        titles = []
        for title, chunk_id in self.catalog.lead_chunks(kb_id):
            padded, compact = _forms(title)
            if _CJK.search(compact):
                if len(compact) >= _MIN_CJK:
                    titles.append((compact, True, chunk_id))
            elif len(compact) >= _MIN_LATIN:
                titles.append((padded.strip(), False, chunk_id))
        with self._lock:
            self._cache[kb_id] = (version, titles)
        return titles


def _forms(text: str) -> tuple[str, str]:
    """(words separated by single spaces and padded, the same without spaces), case folded."""
    tokens = _TOKEN.findall(text.casefold())
    return f" {' '.join(tokens)} ", "".join(tokens)
