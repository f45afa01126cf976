"""Progress events and the build report: what a build tells the CLI and the UI as it runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["BuildReport", "ItemFailure", "ProgressEvent", "ProgressSink", "RateClock"]


@dataclass(frozen=True)
class ProgressEvent:
    stage: str  # scan | parse | entity graph | question index | indexing | paused | resumed | done
    done: int
    total: int
    message: str = ""
    eta_s: float | None = None
    chunks: int = 0  # chunks indexed so far in this build


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
    rejected: dict[str, int] = field(default_factory=dict)  # "role: what was dropped" -> count
    extract_seconds: float = 0.0  # time spent extracting knowledge (LLM calls or heuristics)
    seconds: float = 0.0
    stopped: str = ""  # why the build stopped early (an unreachable LLM), if it did

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
            "rejected": dict(self.rejected),
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped or None,
        }


class RateClock:
    """Estimate the time left from the rate so far."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def eta(self, done: int, total: int) -> float | None:
        elapsed = self.elapsed()
        if done <= 0 or total <= done or elapsed <= 0:
            return None if total > done else 0.0
        return (total - done) * elapsed / done
