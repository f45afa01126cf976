"""The vectors a catalog implies (docs/architecture.md §3, §4): for every knowledge base, each
vector a finished build wrote, and the texts it was made from.

The catalog is the source of truth and every vector derives from it: a chunk's from its
document's title and its heading path and text (`embedding_text`), a question's from its text,
an entity's from its name, aliases and description (`entity_text`), each BM25 text analysed
under the knowledge base's analysis, as the build does (core/build/batches.py). So a home
backup may leave the vectors out and a restore make them again, the same ones where the
embedder is the same (the built-in model embeds a text alike in any batch); and a vector that
was copied is used only where its indexed text is the one the catalog implies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from ..build import embedding_text
from ..choices import DocumentState
from ..models import Chunk, KnowledgeBase
from ..store.analysis import bm25_text
from ..store.contracts import CatalogProtocol, GraphStoreProtocol
from ..store.vectors import primary_key

__all__ = ["Derived", "derived_vectors"]


@dataclass(frozen=True)
class Derived:
    """One vector as a build writes it: `text` is what Milvus indexes for BM25, `source` what
    the embedder embeds."""

    kind: str
    ref_id: int
    doc: int  # 0 for entities
    text: str
    source: str

    @property
    def pk(self) -> int:
        return primary_key(self.kind, self.ref_id)


def derived_vectors(
    catalog: CatalogProtocol, graph: GraphStoreProtocol, kb: KnowledgeBase
) -> Iterator[Derived]:
    """Every vector of `kb`'s indexed documents (chunks, their questions) and of its entities,
    read in one snapshot of the catalog."""
    with catalog.transaction():
        _, tables = catalog.dump_rows(kb)
        docs = {
            int(d["id"]): d["title"]
            for d in tables["documents"]
            if d["status"] == DocumentState.INDEXED
        }
        chunks = [c for c in tables["chunks"] if int(c["document_id"]) in docs]
        tables |= graph.dump_rows(kb.id, [int(c["id"]) for c in chunks])
        entities = graph.entity_text([int(e["id"]) for e in tables["entities"]])
    doc_of = {int(c["id"]): int(c["document_id"]) for c in chunks}
    for c in chunks:
        chunk = Chunk(
            ordinal=c["ordinal"], text=c["text"], heading_path=tuple(json.loads(c["heading_path"]))
        )
        source = embedding_text(docs[int(c["document_id"])], chunk)
        yield Derived("chunk", int(c["id"]), doc_of[int(c["id"])], _bm25(source, kb), source)
    for q in tables["questions"]:
        if int(q["chunk_id"]) in doc_of:
            doc = doc_of[int(q["chunk_id"])]
            yield Derived("question", int(q["id"]), doc, _bm25(q["text"], kb), q["text"])
    for entity_id, text in sorted(entities.items()):
        yield Derived("entity", entity_id, 0, text, text)


def _bm25(text: str, kb: KnowledgeBase) -> str:
    return bm25_text(text, kb.analysis)
