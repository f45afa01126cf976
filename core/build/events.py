"""Progress events and the build report: what a build tells the CLI and the UI as it runs, and
the counters of a run that the events are made of (`Progress`)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "STAGES",
    "BuildReport",
    "ItemFailure",
    "Progress",
    "ProgressEvent",
    "ProgressSink",
    "RateClock",
]

# What a build reports, roughly in order (docs/architecture.md §4); "ocr" counts the scanned
# pages of one PDF as OCR reads them (`step` of `steps`, the document's name the message), and
# "vision" the same pages as the vision model reads them (ZHIXING_VISION_MODEL). Each batch of chunks goes
# through extraction ("entity graph" in graph mode, "question index" with an LLM in index mode),
# "embedding" and "indexing" (its vectors written), while the next documents parse.
STAGES = (
    "scan",
    "parse",
    "ocr",
    "vision",
    "entity graph",
    "question index",
    "embedding",
    "indexing",
    "paused",
    "resumed",
    "done",
)


@dataclass(frozen=True)
class ProgressEvent:
    """One step of a build. `message` is an English line for the CLI and the debug log; a page
    words the stage from the numbers instead.

    `step` of `steps` counts the stage's own work: documents (scan, parse), the chunks a batch
    extracts from, the texts it embeds, the vectors it writes. `fraction` is the whole build's
    progress: documents read times chunks embedded of those read, so a build of one long
    document moves while it embeds instead of sitting full once its one file is parsed.
    """

    stage: str  # one of STAGES
    done: int  # documents considered so far
    total: int
    message: str = ""
    eta_s: float | None = None
    chunks: int = 0  # chunks indexed (their vectors written) so far in this build
    embedded: int = 0  # chunks embedded so far in this build
    queued: int = 0  # chunks of the documents read so far
    step: int = 0
    steps: int = 0
    fraction: float = 0.0


ProgressSink = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class ItemFailure:
    source: str
    error: str


@dataclass
class BuildReport:
    kb: str
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[ItemFailure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    chunks: int = 0
    questions: int = 0
    degraded: int = 0  # chunks whose extraction failed; still searchable by their text
    fallbacks: dict[str, int] = field(default_factory=dict)  # why they failed -> how many
    offline: int = 0  # of those, graph chunks that kept the offline extractor's entities
    rejected: dict[str, int] = field(default_factory=dict)  # "role: what was dropped" -> count
    extract_seconds: float = 0.0  # time spent extracting knowledge (LLM calls or heuristics)
    seconds: float = 0.0
    stopped: str = ""  # why the build stopped early (an unreachable LLM), if it did
    cancelled: bool = False  # the build was cancelled before it ended
    indexed: int = 0  # of a cancelled build: the documents it indexed, which stay
    left: int = 0  # of a cancelled build: its documents not indexed, which a resume builds
    job: int = 0  # the durable job's id (core/build/durable.py), which a resume names

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stopped

    def to_json(self) -> dict[str, object]:
        return {
            "kb": self.kb,
            "added": len(self.added),
            "replaced": len(self.replaced),
            "skipped": len(self.skipped),
            "failed": [{"document": f.source, "error": f.error} for f in self.failed],
            "warnings": self.warnings,
            "chunks": self.chunks,
            "questions": self.questions,
            "degraded": self.degraded,
            "fallbacks": dict(self.fallbacks),
            "offline_knowledge": self.offline,
            "rejected": dict(self.rejected),
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped or None,
            "cancelled": self.cancelled,
            "indexed": self.indexed if self.cancelled else None,
            "left": self.left if self.cancelled else None,
        }


class RateClock:
    """Estimate the time left from the rate measured so far, re-measured as the build goes.

    The rate is the progress made over the last `window_s` seconds, from the first moment
    there was any, so neither the start (a model loading, the first batch in the hands of
    the LLM) nor an early slow stretch holds the estimate once the build runs faster, and a
    stretch that slows it down shows. No estimate before `min_span_s` of measured progress.
    """

    def __init__(
        self,
        *,
        window_s: float = 60.0,
        min_span_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.start = clock()
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._samples: deque[tuple[float, float]] = deque()  # (elapsed, fraction)
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        return self._clock() - self.start

    def eta(self, fraction: float) -> float | None:
        """Seconds left at the rate measured, for a build `fraction` (0..1) done; None while
        too little is measured, 0 once all is."""
        if fraction >= 1:
            return 0.0
        if fraction <= 0:
            return None
        now = self.elapsed()
        with self._lock:
            samples = self._samples
            if not samples or fraction > samples[-1][1]:
                samples.append((now, fraction))
            # Keep one sample at or before the window's start, so the rate spans the window.
            while len(samples) > 1 and samples[1][0] <= now - self.window_s:
                samples.popleft()
            since, then = samples[0]
        span = now - since
        if span < self.min_span_s or fraction <= then:
            return None
        rate = (fraction - then) / span
        return (1 - fraction) / rate


_EVENT_INTERVAL_S = 0.25


class Progress:
    """A run's counters, and the progress events they make: at most one each
    `_EVENT_INTERVAL_S` while documents are read, unless forced."""

    def __init__(self, emit: ProgressSink) -> None:
        self.emit = emit
        self.clock = RateClock()
        self.done = 0
        self.total = 0
        self.indexed_chunks = 0
        self.queued_chunks = 0  # chunks of the documents read so far
        # Chunks embedded, a batch counting in proportion to its texts embedded (the embedding
        # thread alone writes it): the share of the read documents' work that is done.
        self.embedded = 0.0
        self.stage = ""  # the latest event's, told or not (a job's heartbeat writes it)
        self._last_event = 0.0

    def event(
        self, stage: str, message: str, *, step: int = 0, steps: int = 0, force: bool = False
    ) -> None:
        """Tell the sink where the build stands (not when the last event is recent, unless
        `force`: a stage's start and end are always told)."""
        self.stage = stage
        now = self.clock.elapsed()
        if not force and now - self._last_event < _EVENT_INTERVAL_S and self.done < self.total:
            return
        self._last_event = now
        fraction = self.fraction()
        self.emit(
            ProgressEvent(
                stage=stage,
                done=self.done,
                total=self.total,
                message=message,
                eta_s=self.clock.eta(fraction),
                chunks=self.indexed_chunks,
                embedded=int(self.embedded),
                queued=self.queued_chunks,
                step=step,
                steps=steps,
                fraction=fraction,
            )
        )

    def snapshot(self) -> dict[str, object]:
        """Where the build stands, as its job row records it (`JobStore.beat`)."""
        return {
            "done": self.done,
            "total": self.total,
            "stage": self.stage,
            "progress": self.fraction(),
            "chunks": self.indexed_chunks,
            "embedded": int(self.embedded),
            "queued": self.queued_chunks,
        }

    def fraction(self) -> float:
        """Documents read, times chunks embedded of those read (see ProgressEvent)."""
        read = self.done / self.total if self.total else 1.0
        if not self.queued_chunks:
            return read
        return read * min(self.embedded / self.queued_chunks, 1.0)
