"""The LLM response cache (docs/architecture.md §3 `llm_cache`): rebuilding a knowledge base costs no calls.

A response is stored under the hash of everything that determines it: the model, the rendered
prompt and the output schema. Changing any of them (a new prompt wording, a schema field) makes
a new key, so a stale answer is never served; old rows are simply never read again.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing core.store at runtime would load pymilvus just for a type
    from ..store.dialect import SqlDatabase

__all__ = ["LLMCache", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at {real} NOT NULL
);
"""


def cache_key(model: str, prompt: str, schema: dict[str, Any]) -> str:
    """Hash a call's model, rendered prompt and output JSON schema into a cache key."""
    digest = hashlib.sha256()
    # NUL separators: no concatenation of two different triples can produce the same bytes.
    for part in (model, prompt, json.dumps(schema, sort_keys=True, ensure_ascii=False)):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


class LLMCache:
    """Validated LLM responses kept in the home's catalog database. Safe to share between threads."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        db.execute(db.dialect.ddl(_SCHEMA))

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the cached response for `key`, or None."""
        rows = self.db.rows("SELECT response FROM llm_cache WHERE key = ?", (key,))
        if not rows:
            return None
        try:
            value = json.loads(rows[0]["response"])
        except json.JSONDecodeError:
            return None  # a damaged row is a miss; the next put() replaces it
        return value if isinstance(value, dict) else None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Store (or replace) the response for `key`."""
        text = json.dumps(response, ensure_ascii=False, sort_keys=True)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET model = excluded.model,"
                " response = excluded.response, created_at = excluded.created_at",
                (key, model, text, time.time()),
            )

    def __len__(self) -> int:
        return int(self.db.rows("SELECT COUNT(*) AS n FROM llm_cache")[0]["n"])
