"""Shared helpers of the fault tests: a graph corpus, a deterministic fake LLM, snapshots."""

from __future__ import annotations

import hashlib
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.command import ROOT
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


# Run in a fresh interpreter, which then becomes the command (execv): what the fault tests
# would otherwise do in `preexec_fn`, between fork and exec of this test process. That process
# runs threads (Milvus Lite's gRPC, the fake endpoint), and Python code there may find a lock
# another thread held at the fork: on a loaded machine the child aborted (SIGABRT, no output).
_LAUNCHER = """
import ctypes, json, os, resource, signal, sys
setup = json.loads(sys.argv[1])
if setup["drop_root_overrides"]:
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):  # PR_CAPBSET_DROP: gone from the command that is exec'd
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
if setup["file_limit"]:
    # A write past the limit then fails with EFBIG, as a write to a full disk fails with
    # ENOSPC; an ignored SIGXFSZ stays ignored in the exec'd command (it would kill it).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (setup["file_limit"],) * 2)
os.execv(sys.argv[2], sys.argv[2:])
"""


def confined(
    command: list[str], *, drop_root_overrides: bool = False, file_limit: int = 0
) -> list[str]:
    """`command`, started so that it runs without root's power to write through mode bits
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER: a read-only folder is then read-only
    to it as to anyone) and/or unable to write a file past `file_limit` bytes."""
    setup = {"drop_root_overrides": drop_root_overrides, "file_limit": file_limit}
    return [sys.executable, "-c", _LAUNCHER, json.dumps(setup), *command]


def kill_midway(
    args: list[str], env: Mapping[str, str], until: Callable[[], bool], poll_s: float
) -> subprocess.Popen[bytes]:
    """Start `zhixing ARGS` as a process, wait (two minutes at most) until `until()` holds, and
    kill it with SIGKILL, as a power cut would; return the killed process."""
    process = subprocess.Popen(
        [sys.executable, "-m", "zhixing.cli.main", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not until() and time.monotonic() < deadline:
        assert process.poll() is None, "the build finished before it could be killed"
        time.sleep(poll_s)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return process
