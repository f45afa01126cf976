"""Removing documents from a knowledge base: every trace of them, in an order that survives a kill."""

from __future__ import annotations

from collections.abc import Sequence

from ..embed import Embedder
from ..models import KnowledgeBase
from ..store import VectorRecord, VectorStore
from ..store.contracts import CatalogProtocol, GraphStoreProtocol

__all__ = ["remove_documents"]


def remove_documents(
    catalog: CatalogProtocol,
    vectors: VectorStore,
    kb: KnowledgeBase,
    doc_ids: Sequence[int],
    *,
    graph: GraphStoreProtocol,
    embedder: Embedder,
    flush: bool = True,
) -> None:
    """Remove documents and every trace of them: graph mentions, vectors, then catalog rows.

    The documents are flagged `removing` first, so a removal that is interrupted half-way is
    never mistaken for an indexed document: running it again (or re-adding) completes it.
    Entities and relations no other document mentions go; the survivors' descriptions are
    rebuilt from what remains and re-embedded.
    """
    if not doc_ids:
        return
    catalog.mark_removing(doc_ids)
    orphans, _, survivors = graph.forget_chunks(catalog.chunk_ids(kb.id, doc_ids))
    vectors.delete_documents(kb.dimension, kb=kb.id, docs=doc_ids)  # chunks and questions
    vectors.delete_refs(kb.dimension, "entity", orphans)
    texts = graph.entity_text(survivors)
    if texts:
        vecs = embedder.embed(list(texts.values()))
        records = [
            VectorRecord(kb=kb.id, doc=0, kind="entity", ref_id=eid, text=text, vector=v)
            for (eid, text), v in zip(texts.items(), vecs, strict=True)
        ]
        vectors.upsert(kb.dimension, records)
    if flush:  # a build that removes old versions flushes once, at its end
        vectors.flush(kb.dimension)
    for doc_id in doc_ids:
        catalog.delete_document(doc_id)
