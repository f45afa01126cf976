"""Documents a text names by title: a question's most direct link, and a passage's link onward.

A document's title names its subject ("Haymo of Faversham", "GB/T 34944-2017 ..."), so a question
that spells out a title is about that document, however little of its wording the passage shares
with the question. BM25 sees the name as a few ordinary terms and the dense vector barely at all
(hotpotqa-100: the passage titled "Haymo of Faversham" is BM25's first hit but the dense
search's 42nd). Linking by title is exact and cheap: one scan of the titles of the knowledge
bases in scope, cached until their documents change.

`linked` follows the same links from a passage (core/search/fusion.py `link_at`): the documents
a top hit names. A passage's words are not a question's, so there a title must be a name: a
Latin title matches only as written (a document titled "Introduction" is not named by every
"introduction"), a Chinese one of at least four characters.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import NamedTuple

from ..models import KnowledgeBase
from ..store import Catalog
from ..text.chinese import CJK

__all__ = ["TitleIndex"]

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+|[^\W_]+")
_MIN_LATIN = 4  # "Sulli" names a person; "AI" or "Go" would name too much
_MIN_CJK = 2
_MIN_CJK_LINK = 4  # a two-character title (概述, 附录) is a word in running text, not a name
MAX_NAMED = 10


class _Title(NamedTuple):
    folded: str  # case-folded words, single spaces (CJK: no spaces)
    written: str  # the words as written, single spaces (CJK: as `folded`)
    cjk: bool
    chunk_id: int  # the document's first chunk
    document_id: int


class TitleIndex:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._lock = threading.Lock()
        self._cache: dict[int, tuple[tuple[int, int, int], list[_Title]]] = {}

    def named(self, query: str, kbs: Sequence[KnowledgeBase]) -> list[int]:
        """Lead chunks of the documents whose title the query names, the longest title first."""
        padded, compact = _forms(query)
        found: list[tuple[int, int]] = []
        for kb in kbs:
            for t in self._titles(kb.id):
                if (t.folded in compact) if t.cjk else (f" {t.folded} " in padded):
                    found.append((len(t.folded), t.chunk_id))
        found.sort(key=lambda f: (-f[0], f[1]))
        return [chunk_id for _, chunk_id in found[:MAX_NAMED]]

    def linked(self, text: str, kbs: Sequence[KnowledgeBase]) -> list[tuple[int, int]]:
        """(lead chunk, document) of the documents a passage names, the longest title first."""
        padded, compact = _forms(text, fold=False)
        found: list[tuple[int, int, int]] = []
        for kb in kbs:
            for t in self._titles(kb.id):
                if t.cjk:
                    if len(t.written) >= _MIN_CJK_LINK and t.written in compact:
                        found.append((len(t.written), t.chunk_id, t.document_id))
                elif f" {t.written} " in padded:
                    found.append((len(t.written), t.chunk_id, t.document_id))
        found.sort(key=lambda f: (-f[0], f[1]))
        return [(chunk_id, document_id) for _, chunk_id, document_id in found[:MAX_NAMED]]

    def _titles(self, kb_id: int) -> list[_Title]:
        version = self.catalog.documents_version(kb_id)
        with self._lock:
            cached = self._cache.get(kb_id)
            if cached and cached[0] == version:
                return cached[1]
        titles = []
        for title, chunk_id, document_id in self.catalog.lead_chunks(kb_id):
            padded, compact = _forms(title)
            if CJK.search(compact):
                if len(compact) >= _MIN_CJK:
                    titles.append(_Title(compact, compact, True, chunk_id, document_id))
            elif len(compact) >= _MIN_LATIN:
                written = _forms(title, fold=False)[0].strip()
                titles.append(_Title(padded.strip(), written, False, chunk_id, document_id))
        with self._lock:
            self._cache[kb_id] = (version, titles)
        return titles


def _forms(text: str, *, fold: bool = True) -> tuple[str, str]:
    """(words separated by single spaces and padded, the same without spaces), case folded
    unless `fold` is False."""
    tokens = _TOKEN.findall(text.casefold() if fold else text)
    return f" {' '.join(tokens)} ", "".join(tokens)
