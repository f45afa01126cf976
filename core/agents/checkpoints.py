"""The agents' checkpointer (docs/architecture.md §6): conversations' threads in one SQLite file.

Only the project's own state classes are revived from a checkpoint, so a tampered file cannot
make LangGraph import arbitrary code.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from ..answer import Answer, Citation
from ..ask.state import Evidence, Query
from ..errors import StoreError
from ..models import Hit
from ..search.rewrite import QueryRewrites
from ..task.state import Finding, KnowledgeRef, Subtask, SubtaskOutcome

__all__ = ["open_checkpointer"]


def open_checkpointer(path: Path) -> SqliteSaver:
    """The agents' checkpointer over one SQLite file (created with its tables on first use)."""
    known = (Answer, Citation, Evidence, Finding, Hit, KnowledgeRef, Query, QueryRewrites)
    serde = JsonPlusSerializer(allowed_msgpack_modules=(*known, Subtask, SubtaskOutcome))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The saver serialises its own use of the connection with a lock (LangGraph's docs).
        saver = SqliteSaver(sqlite3.connect(str(path), check_same_thread=False), serde=serde)
        saver.setup()
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(
            f"The conversations file {path} cannot be opened ({exc}); make the Zhixing home"
            " writable, or set ZHIXING_HOME to a folder Zhixing may write."
        ) from exc
    return saver
