"""The task agent (docs/architecture.md §7): plan, research, re-plan, execute and report over a workspace.

`run_task(task, TaskContext(...))` is the entry point (`service.tasks.run` wires it);
`open_workspace(path, runs_dir)` gives the read-only `Workspace` (list, read, grep) the agent's
tools run on.
"""

from .configuration import TaskContext
from .flow import TaskResult, build_graph, run_task
from .state import Finding, KnowledgeRef, Subtask, SubtaskOutcome
from .workspace import GrepHit, Workspace, open_workspace, unpack_archive

__all__ = [
    "Finding",
    "GrepHit",
    "KnowledgeRef",
    "Subtask",
    "SubtaskOutcome",
    "TaskContext",
    "TaskResult",
    "Workspace",
    "build_graph",
    "open_workspace",
    "run_task",
    "unpack_archive",
]
