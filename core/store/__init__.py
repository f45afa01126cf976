"""Storage adapters: the home's SQLite stores (one `Database` shared by the catalog, jobs, users,
runs, notebooks and graph) and the Milvus vector store (pymilvus)."""

from .catalog import Catalog
from .sqlite import Database
from .vectors import VectorRecord, VectorStore

__all__ = ["Catalog", "Database", "VectorRecord", "VectorStore"]
