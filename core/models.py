"""Typed, frozen records that flow between the adapters and the pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Chunk", "Hit", "KnowledgeBase", "Page", "ParsedDocument", "StoredDocument"]

BUILD_MODES = ("graph", "index")


@dataclass(frozen=True)
class Page:
    """One page of a parsed document. `number` is 1-based; non-paginated formats have one page 1."""

    number: int
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser returns: the text by page, plus warnings worth telling the user."""

    source: str  # the file name (sanitized) or the `id` of a .jsonl record
    kind: str  # pdf | markdown | text | html | docx | jsonl
    title: str
    pages: tuple[Page, ...]
    warnings: tuple[str, ...] = ()

    @property
    def page_count(self) -> int:
        return len(self.pages)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document, with where it came from.

    Line numbers are 1-based and count over the document's text with its pages joined by
    newlines, so a citation can point at lines even in a PDF.
    """

    ordinal: int
    text: str
    heading_path: tuple[str, ...] = ()
    page_start: int = 1
    page_end: int = 1
    line_start: int = 1
    line_end: int = 1


@dataclass(frozen=True)
class KnowledgeBase:
    id: int
    name: str
    mode: str
    tags: tuple[str, ...] = ()
    description: str = ""
    embedding: str = "builtin"
    dimension: int = 512
    analysis: int = 1  # the BM25 text analysis its index was built with (core.store.analysis)


@dataclass(frozen=True)
class StoredDocument:
    id: int
    kb_id: int
    source: str
    sha256: str
    kind: str
    title: str
    pages: int
    chunks: int
    status: str  # pending | parsed | indexed | failed
    error: str = ""


@dataclass(frozen=True)
class Hit:
    """A fused search result: one chunk, its RRF score, and the rank each strategy gave it."""

    chunk_id: int
    score: float
    document: str
    title: str
    page: int
    text: str
    strategies: dict[str, int] = field(default_factory=dict)
    heading_path: tuple[str, ...] = ()
    line_start: int = 1
    line_end: int = 1
    kb: str = ""
