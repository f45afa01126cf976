"""Result types of the audit: one finding, one run's result, one rule of a rule pack."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class AuditRule:
    """A rule as data: what it reports and under which CWE."""

    id: str
    cwe: int
    title: str
    description: str


@dataclass(frozen=True)
class TraceStep:
    """One step of a finding's short trace (where the data came from, where it went)."""

    file: str
    line: int
    note: str


@dataclass(frozen=True)
class AuditFinding:
    """One reported weakness at a sink (or at the call that leads into one)."""

    file: str  # path relative to the audited root, with forward slashes
    line: int
    column: int
    cwe: int
    rule: str
    title: str
    confidence: str  # "high" | "medium" | "low"
    code: str  # the source line at ``line``, stripped
    trace: tuple[TraceStep, ...] = ()
    clause: str = ""  # left empty by the built-in rule pack
    source: str = ""  # the source kind its data came from (untrusted.py), "" for non-flow rules


@dataclass
class AuditResult:
    """Everything one run produced."""

    root: str
    findings: list[AuditFinding] = field(default_factory=list)
    files_scanned: int = 0
    parse_errors: list[str] = field(default_factory=list)  # files whose tree has ERROR nodes
    seconds: float = 0.0
    # files with a method whose expressions nest deeper than the interpreter follows (generated
    # code: a concatenation of thousands of terms); the rest of the file is still audited
    too_deep: list[str] = field(default_factory=list)
