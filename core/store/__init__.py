"""Storage adapters: the SQLite catalog (sqlite-utils) and the Milvus vector store (pymilvus)."""

from zhixing.core.store.catalog import Catalog
from zhixing.core.store.vectors import VectorRecord, VectorStore

__all__ = ["Catalog", "VectorRecord", "VectorStore"]
