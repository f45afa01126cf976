"""Storage adapters: the SQLite catalog (sqlite-utils) and the Milvus vector store (pymilvus)."""

from core.store.catalog import Catalog
from core.store.vectors import VectorRecord, VectorStore

__all__ = ["Catalog", "VectorRecord", "VectorStore"]
