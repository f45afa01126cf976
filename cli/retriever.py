"""A Zhixing knowledge base as a LangChain retriever.

`ZhixingRetriever` runs Zhixing's fused search (docs/architecture.md §5) and returns LangChain
`Document`s, so a LangChain app (an LCEL chain, an agent's tool) reads a knowledge base built
here. Each document's metadata says where the text is: `source` (the document's name, the key
LangChain's own loaders use), the knowledge base, the document and its title, the page, the
lines, the chunk id, the score and the rank each strategy gave it.

A retriever returns exactly `top_k` documents when the knowledge bases hold that many chunks.
The fused list alone can be shorter: the fusion drops chunks that only a zero-weighted strategy
ranked (a keyword search that matches the question squarely outweighs the dense one,
core/search/fusion.py), and that can drop a Chinese chunk that answers an English question.
The retriever then fills up with the best of each direct search on its own (`FILL`).

    with ZhixingRetriever.from_home(knowledge_bases=["kb"], top_k=5) as retriever:
        chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from ..core.config import Settings
from ..core.models import Hit

__all__ = ["FILL", "ZhixingRetriever", "hit_document"]

# The strategies that fill a short fused list, in this order: the two direct searches, which make
# no LLM call (the dense one first: it reaches across languages).
FILL = ("basic", "keyword")


def hit_document(hit: Hit) -> Document:
    """One fused hit as a LangChain document, its place in the knowledge base in metadata."""
    shown = {k: v for k, v in hit.to_public_json().items() if k != "text"}
    return Document(
        page_content=hit.text, id=str(hit.chunk_id), metadata={"source": hit.document, **shown}
    )


class ZhixingRetriever(BaseRetriever):
    """Fused search over Zhixing knowledge bases, as a LangChain retriever.

    `service` is a `core.service.KnowledgeService` (acting for whoever it acts for: a viewer's
    service searches only what that viewer may see); `knowledge_bases` None searches them all;
    `strategies` None runs the default ones (all six with an LLM configured, else two).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    service: Any = Field(description="a core.service.KnowledgeService")
    knowledge_bases: list[str] | None = None
    top_k: int = Field(default=10, ge=1, le=100)
    strategies: list[str] | None = None
    _owned: bool = PrivateAttr(default=False)  # the service was opened here (`from_home`)

    @classmethod
    def from_home(cls, home: str | Path | None = None, **options: Any) -> ZhixingRetriever:
        """A retriever on a Zhixing home (default: ZHIXING_HOME and the saved settings, as the
        `zhixing` command reads them). Use it in a `with` block, or `close()` it when done: a
        Milvus Lite file admits one process."""
        import os

        from ..core.service import KnowledgeService

        env = dict(os.environ) if home is None else {**os.environ, "ZHIXING_HOME": str(home)}
        settings = Settings.from_env(env)
        service = KnowledgeService(settings)
        try:
            retriever = cls(service=service, **options)
        except Exception:  # an option refused (top_k=0): the home opened for it closes again
            service.close()
            raise
        retriever._owned = True
        return retriever

    def close(self) -> None:
        """Close the service this retriever opened (`from_home`); one passed in stays open."""
        if self._owned:
            self.service.close()

    def __enter__(self) -> ZhixingRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        del run_manager  # LangChain passes it; this retriever reports to no callback
        search = self.service.search
        hits = search.query(
            query, self.knowledge_bases, top_k=self.top_k, strategies=self.strategies
        )
        chosen = self.strategies or search.default_strategies()
        for strategy in [s for s in FILL if s in chosen] or chosen:
            if len(hits) >= self.top_k:
                break
            seen = {hit.chunk_id for hit in hits}
            alone = search.query(
                query, self.knowledge_bases, top_k=self.top_k, strategies=[strategy]
            )
            hits += [hit for hit in alone if hit.chunk_id not in seen][: self.top_k - len(hits)]
        return [hit_document(hit) for hit in hits]
