"""A Zhixing knowledge base as a LangChain retriever.

`ZhixingRetriever` runs Zhixing's fused search (docs/architecture.md §5) and returns LangChain
`Document`s, so a LangChain app (an LCEL chain, an agent's tool) reads a knowledge base built
here. Each document's metadata says where the text is: the knowledge base, the document and its
title, the page, the lines, the chunk id, the fused score and the rank each strategy gave it.

    retriever = ZhixingRetriever.from_home(knowledge_bases=["kb"], top_k=5)
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ..core.config import Settings
from ..core.models import Hit

__all__ = ["ZhixingRetriever", "hit_document"]


def hit_document(hit: Hit) -> Document:
    """One fused hit as a LangChain document, its place in the knowledge base in metadata."""
    return Document(
        page_content=hit.text,
        id=str(hit.chunk_id),
        metadata={k: v for k, v in hit.to_public_json().items() if k != "text"},
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

    @classmethod
    def from_home(cls, home: str | Path | None = None, **options: Any) -> ZhixingRetriever:
        """A retriever on a Zhixing home (default: ZHIXING_HOME and the saved settings, as the
        `zhixing` command reads them). Close it with `close()` when done: a Milvus Lite file
        admits one process."""
        import os

        from ..core.service import KnowledgeService

        env = dict(os.environ) if home is None else {**os.environ, "ZHIXING_HOME": str(home)}
        settings = Settings.from_env(env)
        return cls(service=KnowledgeService(settings), **options)

    def close(self) -> None:
        self.service.close()

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        del run_manager  # LangChain passes it; this retriever reports to no callback
        hits = self.service.search.query(
            query, self.knowledge_bases, top_k=self.top_k, strategies=self.strategies
        )
        return [hit_document(hit) for hit in hits]
