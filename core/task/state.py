"""The task agent's state and the records it produces: subtasks, knowledge references, findings.

State is a typed dict; `findings` and `done` accumulate through reducers, so the execute node
returns only what one subtask added.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

from langgraph.channels.untracked_value import UntrackedValue

# pydantic derives the graphs' JSON schemas (LangGraph Studio's forms) only from this TypedDict
# on Python 3.11.
from typing_extensions import TypedDict

from ..agents.memory import remember
from ..audit import AuditResult
from ..models import Hit

__all__ = [
    "Finding",
    "KnowledgeRef",
    "Subtask",
    "SubtaskOutcome",
    "TaskInput",
    "TaskOutput",
    "TaskState",
    "knowledge_ref",
]

HEURISTIC_NOTE = "unconfirmed heuristic"


@dataclass(frozen=True)
class KnowledgeRef:
    """A piece of knowledge a subtask or finding rests on: clause/section, document and page."""

    document: str
    section: str
    page: int
    text: str
    chunk_id: int = 0
    kb: str = ""
    line_start: int = 0  # in the document: orders sections as the document does

    def to_json(self) -> dict[str, Any]:
        """The `run --json` knowledge shape (docs/architecture.md §9)."""
        return {
            "document": self.document,
            "section": self.section,
            "page": self.page,
            "text": self.text,
        }


def knowledge_ref(hit: Hit, *, max_chars: int = 600) -> KnowledgeRef:
    """The reference for a search hit: its innermost heading is the clause it belongs to."""
    section = hit.heading_path[-1] if hit.heading_path else hit.title
    return KnowledgeRef(
        document=hit.document,
        section=section,
        page=hit.page,
        text=hit.text[:max_chars],
        chunk_id=hit.chunk_id,
        kb=hit.kb,
        line_start=hit.line_start,
    )


@dataclass(frozen=True)
class Subtask:
    """One concrete step of the revised plan, tied to the knowledge that defines it.

    `topic` names a row of the built-in risk table (`core.task.audit_rules.TOPICS`), or is ""
    when the knowledge named no known topic; `patterns` are the regular expressions the offline
    scan (and the model, as hints) greps for.
    """

    title: str
    goal: str
    knowledge: tuple[KnowledgeRef, ...] = ()
    topic: str = ""
    patterns: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "goal": self.goal,
            "topic": self.topic,
            "patterns": list(self.patterns),
            "knowledge": [k.to_json() for k in self.knowledge],
        }


@dataclass(frozen=True)
class Finding:
    """A candidate problem: where it is (file:line, the code line) and what knowledge it breaks."""

    title: str
    severity: str  # high | medium | low | info
    file: str
    line: int
    code: str
    knowledge: tuple[KnowledgeRef, ...] = ()
    subtask: str = ""
    confirmed: bool = False  # False: a pattern matched, nobody (no model) has read the code
    note: str = ""
    cwe: int = 0  # the weakness, when known (0: not classified)
    rule: str = ""  # what found it: a built-in rule id (zhixing.…), or "model"
    confidence: str = ""  # high | medium | low, for the data-flow analysis's findings
    trace: tuple[str, ...] = ()  # the data flow, source to sink ("File.java:12 request data read")
    # The model's reason when it rejected this candidate: the finding stays (the model adds,
    # never subtracts), marked "the model disagreed" and written to SARIF as a suppression.
    disagreed: str = ""

    def to_json(self) -> dict[str, Any]:
        """The `run --json` finding shape (docs/architecture.md §9), plus subtask, confirmed and note."""
        out = asdict(self)
        out["knowledge"] = [k.to_json() for k in self.knowledge]
        return out


@dataclass(frozen=True)
class SubtaskOutcome:
    """What executing one subtask came to: its summary, its tool calls and how it ran."""

    index: int
    title: str
    summary: str
    tool_calls: int
    # "tools" | "structured turns" | "offline, model reviewing" (core/task/turns.py) |
    # "offline" | "offline (LLM failed)" | "built-in"
    mode: str
    findings: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


class TaskState(TypedDict, total=False):
    """What flows between the nodes; each node returns a partial update of it."""

    task: str
    turns: Annotated[list[dict[str, Any]], remember]  # the thread's earlier tasks (memory)
    research: list[KnowledgeRef]  # the knowledge found for the task, best first
    plan_before: list[str]
    subtasks: list[Subtask]  # the revised plan
    cursor: int  # the index of the next subtask to execute
    findings: Annotated[list[Finding], operator.add]
    done: Annotated[list[SubtaskOutcome], operator.add]
    report: str
    warnings: list[str]  # what the user must know about the run (no workspace: nothing audited)
    # The run's own state, set afresh by its first node (research), so the context stays frozen:
    # the workspace's data-flow analysis (made once; large, so never checkpointed), the model's
    # reviews spent so far (core/task/confirm.py), and whether the chat model's tool-calling
    # turns hold calls (None until the endpoint's probe or a subtask has shown it; False sends
    # later subtasks straight to structured turns, core/task/turns.py).
    analysis: Annotated[AuditResult | None, UntrackedValue]
    confirmations: int
    tool_turns: bool | None


class TaskInput(TypedDict):
    """What a host (LangGraph Studio) sends a run: the task. The knowledge bases and the
    workspace are the run's options (its context), not its input."""

    task: str


class TaskOutput(TypedDict, total=False):
    """What a host gets back: the report, the findings, and what the user must know."""

    report: str
    findings: list[Finding]
    warnings: list[str]
