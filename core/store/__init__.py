"""Storage adapters: the SQLite catalog (sqlite-utils) and the Milvus vector store (pymilvus)."""

from .catalog import Catalog
from .vectors import VectorRecord, VectorStore

__all__ = ["Catalog", "VectorRecord", "VectorStore"]
