"""Shared helpers of the fault tests: a graph corpus, a deterministic fake LLM, snapshots."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from tests.fake_openai import default_responder

_WORDS = ["Kernel", "Packet", "Cipher", "Router", "Audit", "Token", "Session", "Vault"]
_FIRST_LINE = re.compile(r"^1\| ?(.*)$", re.M)


def graph_corpus(path: Path, n: int) -> Path:
    """n records whose capitalized terms recur across records: entities merge by name, and
    their descriptions grow (some past the limit, so they get summarized)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            lines = [
                f"{_WORDS[(i + j) % 8]}{(i * 3 + j) % 3} guards {_WORDS[(i + 2 * j) % 8]}"
                f"{(i + j) % 7} in record {i} line {j}."
                for j in range(4)
            ]
            out.write(
                json.dumps({"id": f"doc-{i:04d}", "title": f"record {i}", "text": "\n".join(lines)})
                + "\n"
            )
    return path


def responder(body: dict[str, Any]) -> dict[str, Any] | str:
    """The fake's default answers, with descriptions that depend on the chunk, and summaries
    that depend on what they summarize: so merge order would show in the result."""
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    out = default_responder(body)
    if isinstance(out, dict) and "entities" in out:
        first = _FIRST_LINE.search(prompt)
        tag = first.group(1)[:48] if first else ""
        for entity in out["entities"]:
            entity["description"] = f"{entity['name']} is named in: {tag}."
        for relation in out["relations"]:
            relation["description"] = f"{relation['source']} with {relation['target']}: {tag}."
    elif isinstance(out, dict) and set(out) == {"description"}:
        out = {"description": f"Summary {hashlib.sha1(prompt.encode()).hexdigest()[:10]}."}
    return out


def snapshot(catalog: Path) -> dict[str, Any]:
    """Everything a build made, by content (never by row id): comparable across homes."""
    with sqlite3.connect(catalog) as conn:
        q = conn.execute
        chunks = sorted(
            q(
                "SELECT d.source, c.ordinal, c.text FROM chunks c JOIN documents d"
                " ON d.id = c.document_id"
            ).fetchall()
        )
        docs = sorted(q("SELECT source, status FROM documents").fetchall())
        questions = sorted(
            q(
                "SELECT d.source, c.ordinal, x.text, x.line_start, x.line_end FROM questions x"
                " JOIN chunks c ON c.id = x.chunk_id JOIN documents d ON d.id = c.document_id"
            ).fetchall()
        )
        entities = sorted(
            (name, type_, description, tuple(sorted(json.loads(aliases))))
            for name, type_, description, aliases in q(
                "SELECT name, type, description, aliases FROM entities"
            )
        )
        relations = sorted(
            q(
                "SELECT s.name, t.name, r.type, r.description, r.weight FROM relations r"
                " JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id"
            ).fetchall()
        )
        entity_mentions = sorted(
            q(
                "SELECT e.name, d.source, c.ordinal, m.name, m.description FROM entity_mentions m"
                " JOIN entities e ON e.id = m.entity_id JOIN chunks c ON c.id = m.chunk_id"
                " JOIN documents d ON d.id = c.document_id"
            ).fetchall()
        )
        relation_mentions = sorted(
            q(
                "SELECT s.name, t.name, r.type, d.source, c.ordinal, m.description"
                " FROM relation_mentions m JOIN relations r ON r.id = m.relation_id"
                " JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id"
                " JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.document_id"
            ).fetchall()
        )
    return {
        "documents": docs,
        "chunks": chunks,
        "questions": questions,
        "entities": entities,
        "relations": relations,
        "entity_mentions": entity_mentions,
        "relation_mentions": relation_mentions,
    }


def catalog_counts(catalog: Path) -> dict[str, int]:
    """What Milvus must hold per kind, by the catalog (relations are not embedded)."""
    with sqlite3.connect(catalog) as conn:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "chunk": one(
                "SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
                " WHERE d.status = 'indexed'"
            ),
            "question": one("SELECT COUNT(*) FROM questions"),
            "entity": one("SELECT COUNT(*) FROM entities"),
        }


def milvus_counts(vectors: Any, dimension: int, kb_id: int) -> dict[str, int]:
    return {
        kind: vectors.count(dimension, kb=kb_id, kind=kind)
        for kind in ("chunk", "question", "entity")
    }


def indexed_documents(catalog: Path) -> int:
    """How many documents a build (in another process) has indexed so far; 0 before it starts."""
    if not catalog.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute(
                "SELECT COUNT(*) FROM documents WHERE status = 'indexed'"
            ).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
