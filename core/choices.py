"""The closed sets of names a user or a stored row may give: build modes, job states, search
strategies. Each is a `StrEnum`, so a member is its own string in SQL, JSON and comparisons, and
`parse` turns user input into a member or a sentence that lists the valid names.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from .errors import ZhixingError

__all__ = [
    "BuildMode",
    "CellMode",
    "DocumentState",
    "GraphFormat",
    "JobState",
    "Strategy",
    "valid_names",
]

# How an error names each kind: (one, many).
_NOUNS = {
    "BuildMode": ("build mode", "build modes"),
    "CellMode": ("cell mode", "cell modes"),
    "DocumentState": ("document state", "document states"),
    "GraphFormat": ("graph file format", "formats"),
    "JobState": ("job state", "job states"),
    "Strategy": ("search strategy", "strategies"),
}


def valid_names(kind: type[StrEnum]) -> str:
    """The members' names as a user types them: "index, graph"."""
    return ", ".join(member.value for member in kind)


class _Choice(StrEnum):
    @classmethod
    def parse(cls, value: str) -> Self:
        """The member named `value` (spaces and case forgiven), or ZhixingError listing them."""
        key = str(value).strip().casefold()
        for member in cls:
            if member.value == key:
                return member
        one, many = _NOUNS[cls.__name__]
        raise ZhixingError(f"Unknown {one} {value!r}; valid {many}: {valid_names(cls)}.")


class BuildMode(_Choice):
    """What a build writes: the searchable index only, or the entity graph as well."""

    INDEX = "index"
    GRAPH = "graph"


class DocumentState(_Choice):
    """A document's state in the catalog (`documents.status`)."""

    CHUNKED = "chunked"  # its chunks are in the catalog; their vectors are being written
    INDEXED = "indexed"  # every chunk has its vectors: searchable
    FAILED = "failed"  # it could not be read; the row keeps the error, no chunks
    REMOVING = "removing"  # being removed: hidden from search until it is gone


class JobState(_Choice):
    """A build job's state, in the catalog's `jobs` table and the app's background jobs."""

    RUNNING = "running"
    PAUSED = "paused"  # the LLM endpoint is away; the job waits for it (core.build.pause)
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # its process died; `resume` picks it up

    @property
    def active(self) -> bool:
        """At work (or was, if its process died without saying)."""
        return self in (JobState.RUNNING, JobState.PAUSED)


class Strategy(_Choice):
    """A search strategy (docs/architecture.md §5)."""

    BASIC = "basic"
    HYDE = "hyde"
    SPLIT = "split"
    GENERALIZE = "generalize"
    KEYWORD = "keyword"
    GRAPH = "graph"


class CellMode(_Choice):
    """What a notebook cell does with its question (docs/architecture.md §8)."""

    SEARCH = "search"  # the fused hits only, no answer
    ANSWER = "answer"  # one search, then the grounded answer
    AGENTIC = "agentic"  # the agentic loop: rounds, evidence, answer


class GraphFormat(_Choice):
    """A file format the entity graph exports to (core/graph_file.py), named by its suffix."""

    GRAPHML = "graphml"  # yEd, Cytoscape, Gephi, networkx
    GEXF = "gexf"  # Gephi

    @property
    def media_type(self) -> str:
        return "application/graphml+xml" if self is GraphFormat.GRAPHML else "application/gexf+xml"
