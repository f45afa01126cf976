"""Tasks: the task agent (docs/architecture.md §7) over the knowledge bases the actor may see,
with a workspace folder, an uploaded archive or none, and its findings as SARIF or CSV."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..ask import AgenticResult, run_agentic
from ..errors import AccessError, NotFoundError, ZhixingError
from ..home import private_dir
from ..llm.protocol import ToolCallingLLM
from ..models import KnowledgeBase
from ..task.workspace import ARCHIVE_SUFFIXES
from ..trace import AskSink, EventSink
from .access import Access
from .search import Search

if TYPE_CHECKING:
    from ..task.configuration import TaskContext
    from ..task.flow import TaskResult
    from ..task.workspace import Workspace

__all__ = ["Tasks", "findings_text"]


def findings_text(findings: Sequence[Mapping[str, Any]], kind: str) -> str:
    """A task run's findings (the `run --json` shape) as a SARIF 2.1.0 log ("sarif") or a
    CSV table ("csv"), as `zhixing run --findings` writes them."""
    from .. import __version__
    from ..task.export import render_findings

    return render_findings(findings, kind, __version__)


class Tasks:
    def __init__(self, access: Access, search: Search) -> None:
        self._access, self._home, self._search = access, access.home, search

    def run(
        self,
        task: str,
        names: Sequence[str] | None,
        *,
        workspace: Path | Workspace | None = None,
        upload: tuple[str, bytes] | None = None,
        on_event: EventSink | None = None,
        max_rounds: int = 2,
        top_k: int = 8,
        conversation: str | None = None,
    ) -> TaskResult:
        """Carry out a task with the task agent (docs/architecture.md §7) and return its `TaskResult`.

        `workspace` is a folder (used as it is), an archive (unpacked into a new folder under
        `$ZHIXING_HOME/runs`), a `Workspace`, or None (the task only consults the knowledge).
        `upload` is an archive a client sent, (its name, its bytes): it is staged under a fresh
        private folder by a name the server makes — the client's name only lends its suffix —
        and, like an unpacked archive, removed when the run ends. In one of the actor's
        conversations the run is stored there and researched with the earlier tasks in mind.
        """
        from ..task.workspace import Workspace, open_workspace

        if not task.strip():
            raise ZhixingError("The task is empty.")
        home = self._home
        owner = self._access.actor.name
        thread = home.runs.conversation(conversation, owner).id if conversation else None
        kbs = self._searchable(names)
        runs_dir = private_dir(home.settings.home / "runs")
        with _private_folder(home.settings.home / "uploads") as staging:
            if upload is not None:
                workspace = _stage_archive(staging, *upload)
            unpacked = None
            if workspace is not None and not isinstance(workspace, Workspace):
                workspace = open_workspace(Path(workspace), runs_dir)
                if runs_dir.resolve() in workspace.root.parents:
                    unpacked = workspace.root.parent  # this run's folder: removed at the end
            try:
                return self._run_task(task, kbs, workspace, on_event, max_rounds, top_k, thread)
            finally:
                if unpacked is not None:
                    shutil.rmtree(unpacked, ignore_errors=True)

    def context(
        self,
        names: Sequence[str] | None,
        *,
        workspace: Path | None = None,
        top_k: int = 8,
        max_rounds: int = 2,
    ) -> TaskContext:
        """The task agent's dependencies over the named knowledge bases, with a workspace
        folder or none, for a caller that runs the graph itself (cli/studio.py)."""
        from ..task.workspace import open_workspace

        kbs = self._searchable(names)
        opened = None
        if workspace is not None:
            if not Path(workspace).is_dir():
                raise NotFoundError(f"The workspace {workspace} is not a folder.")
            runs_dir = private_dir(self._home.settings.home / "runs")
            opened = open_workspace(Path(workspace), runs_dir)
        return self._context(kbs, opened, top_k, max_rounds)

    def _context(
        self,
        kbs: Sequence[KnowledgeBase],
        workspace: Workspace | None,
        top_k: int,
        max_rounds: int,
    ) -> TaskContext:
        from ..task.configuration import TaskContext

        def research(text: str, sink: AskSink | None) -> AgenticResult:
            context = self._search.context(kbs, top_k=top_k, max_rounds=max_rounds)
            return run_agentic(text, context, sink)

        engine, llm = self._home.engine, self._home.llm
        chat = llm if isinstance(llm, ToolCallingLLM) else None
        return TaskContext(
            research=research,
            search=lambda query, k: engine.search(query, kbs, top_k=k),
            lookup=lambda query, k: engine.search_many([query], kbs, top_k=k, rewrites=[None])[0],
            workspace=workspace,
            llm=llm,
            chat=chat,
            knowledge_bases=[kb.name for kb in kbs],
        )

    def _run_task(
        self,
        task: str,
        kbs: Sequence[KnowledgeBase],
        workspace: Workspace | None,
        on_event: EventSink | None,
        max_rounds: int,
        top_k: int,
        thread: str | None,
    ) -> TaskResult:
        from ..task.flow import run_task

        context = self._context(kbs, workspace, top_k, max_rounds)
        started = time.time()
        memory = self._home.memory if thread else None
        # The task graph keeps its own thread beside the conversation's ask thread: two graphs
        # never read each other's checkpoints.
        tasks = f"{thread}:task" if thread else None
        result = run_task(task, context, on_event, checkpointer=memory, thread=tasks)
        if thread is not None:
            self._home.runs.save(
                task,
                [kb.name for kb in kbs],
                result.to_json(),
                result.events,
                started_at=started,
                owner=self._access.actor.name,
                conversation=thread,
                kind="task",
            )
        return result

    def _searchable(self, names: Sequence[str] | None) -> list[KnowledgeBase]:
        kbs = self._access.scope(names)
        if not kbs:
            raise NotFoundError("There is no knowledge base yet; create one with `kb create`.")
        for kb in kbs:
            self._access.check_embedder(kb)
        return kbs


@contextmanager
def _private_folder(parent: Path) -> Iterator[Path]:
    """A fresh folder only this user can read, removed with what is in it on the way out."""
    private_dir(parent)
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=parent))  # mode 0700
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stage_archive(folder: Path, name: str, content: bytes) -> Path:
    """Save an uploaded archive under a name the server makes; the client's name lends only
    its archive suffix (the unpacker reads the format from it) and never a path."""
    base = PurePosixPath(str(name).replace("\\", "/")).name.lower()
    suffix = next(
        (s for s in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True) if base.endswith(s)), ""
    )
    if not suffix:
        raise AccessError(
            f"The workspace must be a {', '.join(ARCHIVE_SUFFIXES)} archive; got {base or 'a file with no name'!r}."
        )
    target = folder / f"workspace{suffix}"
    target.write_bytes(content)
    return target
