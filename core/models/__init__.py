"""Typed, frozen records that flow between the adapters and the pipelines. The entity graph's,
as the service hands them out, are in `core.models.graph`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..choices import BuildMode, CellMode, DocumentState

__all__ = [
    "BackupSummary",
    "Chunk",
    "ChunkText",
    "Conversation",
    "DocumentText",
    "Hit",
    "KnowledgeBase",
    "KnowledgeBaseSummary",
    "Notebook",
    "NotebookCell",
    "Page",
    "ParsedDocument",
    "StoredDocument",
    "Turn",
]

BUILD_MODES = tuple(m.value for m in BuildMode)  # index, graph


@dataclass(frozen=True)
class Page:
    """One page of a parsed document. `number` is 1-based; non-paginated formats have one page 1.
    `ocr`: its text was read by OCR from a scan, not from a text layer."""

    number: int
    text: str
    ocr: bool = False


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser returns: the text by page, plus warnings worth telling the user."""

    source: str  # the file name (sanitized) or the `id` of a .jsonl record
    kind: str  # pdf | markdown | text | html | docx | jsonl
    title: str
    pages: tuple[Page, ...]
    warnings: tuple[str, ...] = ()

    @property
    def page_count(self) -> int:
        return len(self.pages)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document, with where it came from.

    Line numbers are 1-based and count over the document's text with its pages joined by
    newlines, so a citation can point at lines even in a PDF.
    """

    ordinal: int
    text: str
    heading_path: tuple[str, ...] = ()
    page_start: int = 1
    page_end: int = 1
    line_start: int = 1
    line_end: int = 1
    ocr: bool = False  # some of its pages were read by OCR (their words may be misread)


@dataclass(frozen=True)
class KnowledgeBase:
    id: int
    name: str
    mode: BuildMode
    tags: tuple[str, ...] = ()
    description: str = ""
    embedding: str = "builtin"
    dimension: int = 512
    # The BM25 text analysis its index was built with (core/store/analysis.py). A catalog row
    # always says; 0 (raw text), as the catalog column's default, for one that never did.
    analysis: int = 0


@dataclass(frozen=True)
class KnownDocument:
    """What a build needs to know of a document it may skip: its row, its content hash, its state."""

    id: int
    sha256: str
    status: DocumentState

    def unchanged(self, sha256: str) -> bool:
        """Indexed already with this content: nothing to build."""
        return self.sha256 == sha256 and self.status == DocumentState.INDEXED


@dataclass(frozen=True)
class StoredDocument:
    id: int
    kb_id: int
    source: str
    sha256: str
    kind: str
    title: str
    pages: int
    chunks: int
    status: DocumentState
    error: str = ""


@dataclass(frozen=True)
class ChunkText:
    """One stored chunk as a reader opens it (a citation's source, an MCP resource)."""

    id: int
    knowledge_base: str
    document_id: int
    document: str  # the document's source
    title: str
    ordinal: int  # 0-based place in its document
    page_start: int
    page_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    ocr: bool
    text: str


@dataclass(frozen=True)
class DocumentText:
    """A stored document as a reader opens it: what is known of it and its chunks in order
    (neighbouring chunks may share a few lines: the chunker overlaps them)."""

    knowledge_base: str
    document: StoredDocument
    chunks: tuple[ChunkText, ...]


@dataclass(frozen=True)
class Hit:
    """A fused search result: one chunk, its RRF score, and the rank each strategy gave it."""

    chunk_id: int
    score: float
    document: str
    title: str
    page: int
    text: str
    strategies: dict[str, int] = field(default_factory=dict)
    heading_path: tuple[str, ...] = ()
    line_start: int = 1
    line_end: int = 1
    kb: str = ""
    ocr: bool = False  # its chunk was read by OCR from a scanned page

    def to_json(self) -> dict[str, Any]:
        """The hit as plain JSON-ready data (a notebook cell stores its hits so)."""
        return asdict(self)

    def to_public_json(self, rank: int | None = None) -> dict[str, Any]:
        """The one shape every front end gives a hit in (docs/architecture.md §9: HIT): `search
        --json`, the MCP tools, the LangChain retriever's metadata; `rank` when it has one."""
        shown = {
            "score": round(self.score, 6),
            "chunk_id": self.chunk_id,
            "knowledge_base": self.kb,
            "document": self.document,
            "title": self.title,
            "page": self.page,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "ocr": self.ocr,
            "heading_path": list(self.heading_path),
            "text": self.text,
            "strategies": dict(self.strategies),
        }
        return shown if rank is None else {"rank": rank, **shown}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Hit:
        """The hit `to_json` wrote; keys it does not know are ignored (a newer writer's)."""
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        known["heading_path"] = tuple(known.get("heading_path", ()))
        known["strategies"] = dict(known.get("strategies", {}))
        return cls(**known)


@dataclass(frozen=True)
class KnowledgeBaseSummary:
    """A knowledge base with its counts, as the pages list it."""

    kb: KnowledgeBase
    documents: int
    chunks: int


@dataclass(frozen=True)
class Conversation:
    """One user's conversation with the agent: a LangGraph thread (its id) and its turns."""

    id: str
    owner: str
    title: str
    created_at: float
    updated_at: float
    turns: int = 0


@dataclass(frozen=True)
class Turn:
    """One question (or task) of a conversation with what came back: `answer` is
    `Answer.to_json()` for a question and `TaskResult.to_json()` for a task."""

    id: int
    kind: Literal["ask", "task"]
    question: str
    kbs: tuple[str, ...]
    answer: dict[str, Any]  # Answer.to_json() (ask) or TaskResult.to_json() (task)
    trace: list[dict[str, Any]]  # the run's trace events (core/trace.py), as stored
    started_at: float


@dataclass(frozen=True)
class BackupSummary:
    """What an export wrote or an import restored (`export --json`, `import --json`)."""

    name: str
    file: str
    embedding: str
    dimension: int
    counts: dict[str, int]  # rows per table, and "vectors"
    source: str | None = None  # import: the archived knowledge base's name
    reembedded: bool | None = None  # import: whether the target's embedder differed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "file": self.file,
            "embedding": self.embedding,
            "dimension": self.dimension,
            "counts": dict(self.counts),
        }
        if self.source is not None:
            out |= {"source": self.source, "reembedded": self.reembedded}
        return out


@dataclass(frozen=True)
class CellResult:
    """What a notebook cell's last run found: its hits, its answer (`Answer.to_json()`; None for a
    search cell), the agentic trace (None unless agentic), when it ran and for how long, and
    the knowledge bases it searched (None in a result kept before runs named them). An
    imported cell's result holds only its answer, `imported` True."""

    hits: tuple[Hit, ...] = ()
    answer: dict[str, Any] | None = None
    events: tuple[dict[str, Any], ...] | None = None
    ran_at: float = 0.0
    seconds: float = 0.0
    kbs: tuple[str, ...] | None = None
    imported: bool = False

    def to_json(self) -> dict[str, Any]:
        """The shape the notebook store keeps (and kept before this class: `from_json` reads it)."""
        if self.imported:
            return {"answer": self.answer, "imported": True}
        return {
            "hits": [h.to_json() for h in self.hits],
            "answer": self.answer,
            "events": None if self.events is None else list(self.events),
            "ran_at": self.ran_at,
            "seconds": self.seconds,
            "kbs": None if self.kbs is None else list(self.kbs),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        events, kbs = data.get("events"), data.get("kbs")
        return cls(
            hits=tuple(Hit.from_json(h) for h in data.get("hits") or () if isinstance(h, dict)),
            answer=data.get("answer"),
            events=None if events is None else tuple(events),
            ran_at=float(data.get("ran_at") or 0.0),
            seconds=float(data.get("seconds") or 0.0),
            kbs=tuple(str(n) for n in kbs) if isinstance(kbs, list) else None,
            imported=bool(data.get("imported")),
        )


@dataclass(frozen=True)
class NotebookCell:
    """One question of a notebook: how to run it, and what its last run found.

    `result` is None until the cell runs, then a `CellResult`.
    `error` is the sentence its last run failed with ("" when it did not). `withheld`: the
    last run consulted a knowledge base the reader may no longer see, so the service shows
    neither its result nor its error (the page says so; running it again searches what they
    may see now). A run also stores the names it searched as "kbs".
    """

    id: str
    notebook: str
    position: int
    question: str
    mode: CellMode = CellMode.ANSWER
    strategies: tuple[str, ...] = ()  # () = the service's default strategies
    top_k: int = 10
    collapsed: bool = False
    result: CellResult | None = None
    error: str = ""
    updated_at: float = 0.0
    withheld: bool = False

    @property
    def hits(self) -> list[Hit]:
        return list(self.result.hits) if self.result is not None else []


@dataclass(frozen=True)
class Notebook:
    """One user's notebook over one set of knowledge bases (`kbs` empty: all they may see)."""

    id: str
    owner: str
    kbs: tuple[str, ...]
    cells: tuple[NotebookCell, ...] = ()
    updated_at: float = 0.0
