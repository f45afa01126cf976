"""The text a build embeds and BM25-indexes for a chunk (docs/architecture.md §4)."""

from __future__ import annotations

from ..models import Chunk

__all__ = ["embedding_text"]


def embedding_text(title: str, chunk: Chunk) -> str:
    """The chunk with its context: the document title and heading path on a line before it."""
    head = [title] if title else []
    head += [h for h in chunk.heading_path if h and h != title]
    return "\n".join([" > ".join(head), chunk.text]) if head else chunk.text
