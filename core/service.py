"""The knowledge service: the one object the CLI and the app talk to, and their only door
into the knowledge.

It owns the catalog, the vector store, the graph, the users, the run log, the conversations'
checkpointer, the build pipeline and the search engine of one Zhixing home — all private —
and speaks in knowledge-base names; everything below it speaks in ids. Every public method
checks what the acting user may do and see (`as_user`); pages and app/ import nothing from
core but this module, core.models, core.errors and core.config (tests/test_layers.py), so
whatever a page shows has passed those checks. The types a page needs from elsewhere in core
are re-exported here.
"""

from __future__ import annotations

import copy
import logging
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .agents.checkpoints import open_checkpointer
from .answer import NOTE_OFFLINE_FOUND, Answer, grounded_answer
from .ask import AgentContext, AgenticResult, run_agentic
from .ask.nodes import offline_aspects
from .auth import LOCAL, ROLES, User, is_loopback
from .build import (
    BuildPipeline,
    BuildReport,
    ProgressEvent,
    ProgressSink,
    remove_documents,
)
from .build.background import BuildJobs, JobView, LogLine
from .build.estimate import BuildEstimate
from .choices import BuildMode, DocumentState, GraphFormat
from .config import Settings
from .embed import Embedder, make_embedder
from .errors import AccessError, BuildBusyError, NotFoundError, StoreError, ZhixingError
from .home import owner_only_umask, private_dir, private_file, tighten, tighten_home
from .ingest import sanitize_name
from .ingest.uploads import Refusal, UploadRefusedError, screen_uploads
from .llm.protocol import LLM, StreamingLLM, ToolCallingLLM
from .llm.tracing import configure_tracing
from .logs import debug_log
from .models import (
    BackupSummary,
    ChunkRef,
    Conversation,
    EntityDetails,
    EntityRelation,
    GraphNodeView,
    GraphStats,
    GraphView,
    Hit,
    KnowledgeBase,
    KnowledgeBaseSummary,
    NeighbourEdge,
    Neighbourhood,
    NeighbourNode,
    StoredDocument,
    Turn,
)
from .search import STRATEGIES, SearchEngine
from .service_access import AccessControl
from .service_notebook import NotebookMixin
from .store import Catalog, VectorStore
from .store.graph import GraphStore
from .store.notebooks import NotebookStore
from .store.runs import RunStore
from .store.users import UserStore
from .task.workspace import ARCHIVE_SUFFIXES
from .trace import AskSink, EventSink

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .backup import Stores
    from .build.durable import JobRecord
    from .task.configuration import TaskContext
    from .task.flow import TaskResult
    from .task.workspace import Workspace

__all__ = [
    "ARCHIVE_SUFFIXES",
    "LOCAL",
    "ROLES",
    "STRATEGIES",
    "BuildEstimate",
    "BuildJobs",
    "BuildReport",
    "Embedder",
    "GraphFormat",
    "BuildBusyError",
    "JobView",
    "KnowledgeService",
    "LogLine",
    "ProgressEvent",
    "User",
    "debug_log",
    "is_loopback",
    "make_embedder",
    "owner_only_umask",
]

MAX_ENTITY_CHUNKS = 20  # chunks shown under one entity; the rest are counted


class KnowledgeService(AccessControl, NotebookMixin):
    """Every public method checks what `actor` may do (core/auth.py) before doing it: the
    service a page or a CLI command holds is `service.as_user(user)`, or the local operator."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        llm_options: Mapping[str, Any] | None = None,
        jobs: BuildJobs | None = None,
    ) -> None:
        """`llm` replaces the client the settings would make; `llm_options` (timeout_s,
        max_attempts, backoff_s) tune the one they make. `jobs` is the process's registry of
        background builds when it outlives this service (the app's); else the service has
        its own."""
        self.settings = settings
        configure_tracing(settings)
        try:
            settings.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"The Zhixing home {settings.home} cannot be created ({exc.strerror or exc}); "
                "set ZHIXING_HOME to a folder this user may write."
            ) from exc
        self._catalog = Catalog(settings.catalog_path)
        self.actor: User = LOCAL
        self._users = UserStore(self._catalog.db)
        self._graph = GraphStore(self._catalog.db)
        if llm is None:
            from .llm import LLMCache, make_client

            llm = make_client(settings, LLMCache(self._catalog.db), **dict(llm_options or {}))
        self.llm = llm
        self.embedder = embedder or make_embedder(settings)
        try:
            self._vectors = VectorStore(
                settings.resolved_milvus_uri,
                settings.milvus_token,
                deployment=self._catalog.deployment(),
            )
        except ZhixingError:
            self._catalog.close()
            raise
        self._pipeline = BuildPipeline(
            self._catalog, self._vectors, self.embedder, settings, graph=self._graph, llm=self.llm
        )
        self._engine = SearchEngine(
            self._catalog, self._vectors, self.embedder, self._graph, llm=self.llm
        )
        self._jobs = jobs if jobs is not None else BuildJobs()
        # Opened on first use (a read-only home still searches), shared by every view.
        self._conversations = _Conversations(self._catalog, settings.home / "conversations.sqlite")
        # Everything is open (Milvus Lite has made its folder): one walk takes group and other
        # bits off whatever an older Zhixing or a loose umask left (core/home.py).
        tighten_home(settings.home)

    @property
    def _runs(self) -> RunStore:
        return self._conversations.runs

    @property
    def _memory(self) -> Any:
        return self._conversations.memory

    @property
    def _notebook_store(self) -> NotebookStore:
        return self._conversations.notebooks

    def close(self) -> None:
        self._conversations.close()
        self._vectors.close()
        self._catalog.close()
        # A host that kept a loose umask (a library, not a front end) may have had files
        # made while it was open (Milvus Lite's segments): they leave owner-only too.
        tighten_home(self.settings.home)

    def as_user(self, user: User) -> KnowledgeService:
        """This service acting for `user`: the same stores, that user's rights (a cheap view;
        close only the original)."""
        view = copy.copy(self)
        view.actor = user
        return view

    def __enter__(self) -> KnowledgeService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- knowledge bases -------------------------------------------------------------------

    def create_kb(
        self, name: str, *, mode: str = "index", tags: Sequence[str] = (), description: str = ""
    ) -> KnowledgeBase:
        self.actor.require("build", "create knowledge bases")
        self.check_name_free(name)
        kb = self._catalog.create_kb(
            name,
            mode=mode,
            tags=tags,
            description=description,
            embedding=self.embedder.name,
            dimension=self.embedder.dimension,
            created_by=self.actor.name,
        )
        self._audit("kb.create", kb.name, mode=kb.mode)
        return kb

    def list_kbs(self) -> list[KnowledgeBase]:
        """The knowledge bases the actor may see."""
        restricted = self._users.restricted()
        return [kb for kb in self._catalog.list_kbs() if self._visible(kb, restricted)]

    def kb_overview(self) -> list[KnowledgeBaseSummary]:
        """The visible knowledge bases with their document and chunk counts."""
        return [KnowledgeBaseSummary(kb, *self._catalog.kb_counts(kb.id)) for kb in self.list_kbs()]

    def check_name_free(self, name: str) -> None:
        """Raise unless a new knowledge base may take `name`. A name taken by a knowledge base
        the actor may not see is refused without saying that it exists."""
        existing = self._catalog.find_kb(name.strip())
        if existing is None:
            return
        if self._visible(existing, self._users.restricted()):
            raise StoreError(f"A knowledge base named {existing.name!r} already exists.")
        raise StoreError(f"The name {name.strip()!r} cannot be used; choose another.")

    def kb(self, name: str) -> KnowledgeBase:
        """The knowledge base `name` if the actor may see it. A missing one and one restricted
        to others read the same, and the sentence lists only names the actor may see: no
        caller (MCP, Studio, a page) learns that a name it may not see exists."""
        restricted = self._users.restricted()
        kb = self._catalog.find_kb(str(name))
        if kb is None or not self._visible(kb, restricted):
            visible = [k.name for k in self._catalog.list_kbs() if self._visible(k, restricted)]
            raise NotFoundError(
                f"There is no knowledge base named {_quoted(name)} that {self.actor.name} may"
                f" see (known: {', '.join(visible) or 'none yet'})."
            )
        return kb

    def delete_kb(self, name: str) -> None:
        """Delete a knowledge base everywhere: its vectors first, then every catalog row.

        Deleting is an admin's. An editor may only undo their own create: a knowledge base
        they made that never held a document (removing every document does not empty it of
        that history: it stays the admin's to delete)."""
        if not self.actor.can("build"):  # the role before the name: a viewer learns nothing
            self.actor.require("admin", "delete knowledge bases")
        kb = self.kb(name)
        if not self.actor.can("admin"):
            creator, filled = self._catalog.kb_origin(kb.id)
            if filled or creator != self.actor.name:
                raise AccessError(
                    f"{self.actor.name} ({self.actor.role}) may not delete {kb.name!r}: an"
                    " editor may delete only a knowledge base they created that never held a"
                    " document, anything more needs the admin role; ask an admin."
                )
        self._vectors.delete(kb.dimension, kb=kb.id)
        self._vectors.flush(kb.dimension)
        self._catalog.delete_kb(kb.id)
        self._audit("kb.delete", kb.name)

    @staticmethod
    def findings_text(findings: Sequence[Mapping[str, Any]], kind: str) -> str:
        """A task run's findings (the `run --json` shape) as a SARIF 2.1.0 log ("sarif") or a
        CSV table ("csv"), as `zhixing run --findings` writes them."""
        from . import __version__
        from .task.export import render_findings

        return render_findings(findings, kind, __version__)

    def export_kb(self, name: str, path: Path) -> BackupSummary:
        """Write a knowledge base to a portable archive (core/backup); return its counts.

        Exporting is an editor's right (docs/architecture.md §10): an archive carries every row
        out of the server's access control. The role is checked before the name, so a viewer
        learns nothing of restricted knowledge bases; `kb` keeps those invisible to non-members.
        """
        from .backup import export_kb

        self.actor.require("build", "export knowledge bases")
        summary = export_kb(self._stores(), self.kb(name), path)
        if Path(path).resolve().is_relative_to(self.settings.home.resolve()):
            tighten(Path(path))  # an archive in the home is as private as the home
        self._audit("kb.export", name, file=str(path))
        return summary

    def import_kb(self, path: Path, *, as_name: str | None = None) -> BackupSummary:
        """Restore an archive as a new knowledge base (re-embedded if the model differs)."""
        from .backup import import_kb, read_archive

        self.authorize("build")
        path = Path(path)
        archive = read_archive(path)
        name = (as_name if as_name is not None else archive.manifest["kb"]["name"]).strip()
        try:
            # A name taken by a knowledge base the user may not see is refused without saying so.
            self.check_name_free(name)
        except StoreError as exc:
            raise StoreError(f"{exc} Import under another name with --as NAME.") from exc
        summary = import_kb(self._stores(), archive, name, path)
        self._audit("kb.import", summary.name, file=str(path), source=summary.source)
        return summary

    def _stores(self) -> Stores:
        from .backup import Stores

        return Stores(
            self._catalog, self._vectors, self._graph, self.embedder, self.settings.embed_batch
        )

    # --- background builds -----------------------------------------------------------------

    def start_build(
        self, name: str, uploads: Sequence[tuple[str, bytes]] = (), paths: Sequence[Path] = ()
    ) -> JobView:
        """Add uploads (name, content) and paths to a knowledge base in the background; the
        uploads are staged under server-made names (core/build/background.py).

        An upload refused for its size or type is not staged, and blocks nothing: it is listed
        among the knowledge base's documents as failed, with its sentence, while the others
        build (UploadRefusedError only when nothing is left to build)."""
        self.actor.require("build", "add documents")
        kb = self.kb(name)
        uploads, refused = screen_uploads(uploads, max_mb=self.settings.max_upload_mb)
        if refused:
            self._jobs.check_idle(kb.name)
            self._record_refused(kb, refused, staged={sanitize_name(n) for n, _ in uploads})
            if not uploads and not paths:
                raise UploadRefusedError(" ".join(r.error for r in refused))
        if uploads:  # staged in a folder of it: owner-only whatever the umask
            private_dir(self.settings.home / "uploads")
        return self._jobs.start(self, name, uploads, paths)

    def _record_refused(
        self, kb: KnowledgeBase, refused: Sequence[Refusal], staged: set[str]
    ) -> None:
        """List refused uploads as failed documents; an indexed version of one stays as it is."""
        for item in refused:
            known = self._catalog.find_document(kb.id, item.source)
            if item.source in staged or (
                known is not None and known.status == DocumentState.INDEXED
            ):
                continue
            self._catalog.record_failure(
                kb.id, source=item.source, sha256=item.sha256, kind="", error=item.error
            )
        self._audit(
            "documents.refuse",
            kb.name,
            files=[r.source for r in refused],
            errors=[r.error for r in refused],
        )

    def jobs(self) -> list[JobView]:
        """The background builds of the knowledge bases the actor may see, newest first."""
        visible = {kb.name for kb in self.list_kbs()}
        return [job for job in self._jobs.list() if job.kb in visible]

    def job(self, job_id: str) -> JobView | None:
        """One visible job, or None (a job of a hidden knowledge base reads as no job)."""
        job = self._jobs.get(job_id)
        return job if job is not None and job.kb in {kb.name for kb in self.list_kbs()} else None

    def build_running(self, name: str) -> JobView | None:
        return self._jobs.running(self.kb(name).name)

    def cancel_job(self, job_id: str) -> None:
        """Ask a build to stop within seconds, keeping what it indexed (an editor's right on
        that base); audited with the job's id."""
        job = self._own_job(job_id, "cancel builds")
        self._jobs.cancel(job.id)
        self._audit("build.cancel", job.kb, job=job.id, files=len(job.files))

    def resume_job(self, job_id: str) -> JobView:
        """Build what a cancelled build left, in the background, in its place."""
        job = self._own_job(job_id, "add documents")
        return self._jobs.resume(self, job.id)

    def dismiss_job(self, job_id: str) -> None:
        """Drop a finished build from the list."""
        self._jobs.forget(self._own_job(job_id, "dismiss builds").id)

    def check_idle(self, name: str) -> None:
        """Raise BuildBusyError when the knowledge base has a build running."""
        self._jobs.check_idle(self.kb(name).name)

    def resume_builds(self) -> list[JobView]:
        """Restart, in the background, the builds a kill of the server interrupted."""
        self.actor.require("build", "add documents")
        return self._jobs.resume_interrupted(self)

    def interrupted_builds(self) -> list[tuple[JobRecord, str]]:
        """The interrupted builds' job records with their knowledge bases' names."""
        self.actor.require("build", "add documents")
        return [
            (record, self._catalog.kb_by_id(record.kb_id).name)
            for record in self._pipeline.interrupted_jobs()
        ]

    def estimate_uploads(
        self, uploads: Sequence[tuple[str, bytes]], modes: Sequence[str]
    ) -> dict[str, BuildEstimate | None] | None:
        """The LLM and embedding cost of building uploads into a new knowledge base in each mode
        (None when `worth_estimating` is not)."""
        from .build.background import estimate

        self.actor.require("build", "add documents")
        if uploads:
            private_dir(self.settings.home / "uploads")
        return estimate(self, uploads, modes)

    def worth_estimating(self) -> bool:
        """Whether a build has a cost to show before it runs: LLM calls, or a slow embedder."""
        from .build.estimate import worth_estimating

        return worth_estimating(self._pipeline)

    def estimate_new(self, mode: str, paths: Sequence[Path]) -> BuildEstimate | None:
        """The LLM and embedding cost of building paths into a knowledge base not created yet."""
        self.actor.require("build", "add documents")
        kb = KnowledgeBase(id=-1, name="new", mode=BuildMode.parse(mode))
        return self._pipeline.estimate(kb, paths)

    def when_builds_idle(self, callback: Callable[[], None]) -> bool:
        """Run `callback` once no build runs (now, or when the last one ends)."""
        return self._jobs.when_idle(callback)

    def _own_job(self, job_id: str, what: str) -> JobView:
        job = self.job(job_id)
        if job is None:
            raise NotFoundError("There is no such build job; it may have been dismissed.")
        self.actor.require("build", what)
        return job

    # --- documents -------------------------------------------------------------------------

    def add(
        self,
        name: str,
        paths: Sequence[Path],
        on_event: ProgressSink | None = None,
        cancel: threading.Event | None = None,
    ) -> BuildReport:
        self.actor.require("build", "add documents")
        kb = self.kb(name)
        self._check_embedder(kb)
        files = [Path(p).name for p in paths]
        try:
            report = self._pipeline.add(kb, [Path(p) for p in paths], on_event, cancel)
        except ZhixingError as exc:
            self._audit("documents.add", kb.name, files=files, error=str(exc))
            raise
        self._audit(
            "documents.add",
            kb.name,
            files=files,
            added=len(report.added),
            replaced=len(report.replaced),
            failed=len(report.failed),
        )
        return report

    def estimate(self, name: str, paths: Sequence[Path]) -> BuildEstimate | None:
        """The cost of adding these paths (core/build/estimate.py): chunks and embedding time,
        and with an LLM its calls, cached, tokens and model; None when not `worth_estimating`."""
        self.actor.require("build", "add documents")
        return self._pipeline.estimate(self.kb(name), [Path(p) for p in paths])

    def documents(self, name: str) -> list[StoredDocument]:
        return self._catalog.list_documents(self.kb(name).id)

    def remove(self, name: str, document: str) -> StoredDocument:
        """Remove one document and every trace of it (chunks, vectors)."""
        self.actor.require("build", "remove documents")
        kb = self.kb(name)
        doc = self._catalog.find_document(kb.id, document)
        if doc is None:
            known = [d.source for d in self._catalog.list_documents(kb.id)]
            hint = (
                f" Documents: {', '.join(known[:10])}{' …' if len(known) > 10 else ''}."
                if known
                else ""
            )
            raise NotFoundError(f"{name!r} has no document named {document!r}.{hint}")
        remove_documents(
            self._catalog, self._vectors, kb, [doc.id], graph=self._graph, embedder=self.embedder
        )
        self._audit("documents.remove", kb.name, document=doc.source)
        return doc

    def resume_interrupted(
        self,
        name: str | None = None,
        *,
        job_id: int | None = None,
        on_event: ProgressSink | None = None,
        cancel: threading.Event | None = None,
        cancelled: bool = False,
    ) -> list[BuildReport]:
        """Finish the builds a kill or a lost LLM endpoint interrupted (of `name`, or all);
        with `cancelled`, also what cancelled builds left."""
        self.actor.require("build", "add documents")
        kb = self.kb(name) if name is not None else None
        reports = self._pipeline.resume_interrupted(
            kb, job_id=job_id, on_event=on_event, cancel=cancel, cancelled=cancelled
        )
        for report in reports:
            self._audit(
                "documents.resume",
                report.kb,
                added=len(report.added),
                skipped=len(report.skipped),
                failed=len(report.failed),
            )
        return reports

    # --- search ----------------------------------------------------------------------------

    def scope(self, names: Sequence[str] | None) -> list[KnowledgeBase]:
        """Resolve knowledge-base names (None or ["@all"] = all) to knowledge bases."""
        if names is None or list(names) in (["@all"], ["all"]) or not names:
            return self.list_kbs()
        return [self.kb(n.removeprefix("@")) for n in names]

    def search(
        self,
        query: str,
        names: Sequence[str] | None,
        *,
        top_k: int = 10,
        strategies: Sequence[str] | None = None,
    ) -> list[Hit]:
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        return self._engine.search(query, kbs, top_k=top_k, strategies=strategies)

    def search_many(
        self,
        queries: Sequence[str],
        names: Sequence[str] | None,
        *,
        top_k: int = 10,
        strategies: Sequence[str] | None = None,
    ) -> list[list[Hit]]:
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        return self._engine.search_many(queries, kbs, top_k=top_k, strategies=strategies)

    def default_strategies(self) -> tuple[str, ...]:
        """The strategies a search runs when none are chosen: all six with an LLM, else the
        two direct searches (core/search/engine.py OFFLINE_STRATEGIES)."""
        return self._engine.default_strategies()

    def summarize(
        self, question: str, hits: Sequence[Hit], *, on_text: Callable[[str], None] | None = None
    ) -> Answer:
        """A grounded answer from these hits only, with citations, or the not-found sentence;
        `on_text` gets the text so far as a model that streams writes it."""
        return grounded_answer(question, hits, llm=self.llm, on_text=on_text)

    def ask(
        self,
        question: str,
        names: Sequence[str] | None,
        *,
        max_rounds: int = 3,
        top_k: int = 10,
        on_event: AskSink | None = None,
        conversation: str | None = None,
    ) -> AgenticResult:
        """Answer a question with the agentic loop (docs/architecture.md §6); the run and its trace are stored
        as the actor's. In one of the actor's conversations the question is read with the
        earlier turns ("and for level 3?"), through the conversation's LangGraph thread."""
        if not question.strip():
            raise ZhixingError("The question is empty.")
        thread = self._runs.conversation(conversation, self.actor.name).id if conversation else None
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        context = self._agent_context(kbs, top_k=top_k, max_rounds=max_rounds, stream=True)
        started = time.time()
        result = run_agentic(
            question,
            context,
            on_event,
            checkpointer=self._memory if thread else None,
            thread=thread,
        )
        if self.llm is not None and not _models_own(result.answer):
            result = self._offline_instead(result, question, kbs, top_k, max_rounds)
        self._runs.save(
            question,
            [kb.name for kb in kbs],
            result.answer.to_json(),
            result.events,
            started_at=started,
            owner=self.actor.name,
            conversation=thread,
        )
        return result

    def _offline_instead(
        self,
        result: AgenticResult,
        question: str,
        kbs: Sequence[KnowledgeBase],
        top_k: int,
        max_rounds: int,
    ) -> AgenticResult:
        """The model adds, never subtracts (issue 34). When it wrote no answer of its own (it found
        nothing, or its reply was unusable), its run ends in the hits' own sentences from the
        evidence its search gathered, which can miss what the offline search finds (its judge
        said "sufficient" a round early, its queries drifted). The loop then runs again offline
        (the rules' rewrites and judge, no model call, about 0.1 s) and, when that finds an
        answer, it is given: exactly what Zhixing answers without a model, marked (the model's
        note, or `NOTE_OFFLINE_FOUND` when its run found nothing at all). The rounds and the
        trace stay the model's run. A follow-up is searched as the model's plan read it."""
        resolved = [str(e.get("resolved") or "") for e in result.events if e["node"] == "plan"]
        offline = run_agentic(
            next((r for r in resolved if r), question),
            self._agent_context(kbs, top_k=top_k, max_rounds=max_rounds, offline=True),
        )
        if not offline.answer.found or not isinstance(offline.answer, Answer):
            return result
        note = getattr(result.answer, "note", "") if result.answer.found else ""
        log.info("The model wrote no answer of its own; the offline search's answer is given.")
        return replace(
            offline,
            answer=replace(offline.answer, note=note or NOTE_OFFLINE_FOUND),
            rounds=result.rounds,
            events=result.events,
        )

    # --- conversations -----------------------------------------------------------------------

    def new_conversation(self, title: str = "") -> Conversation:
        """A new conversation of the actor's (its id is the agents' LangGraph thread)."""
        return self._runs.new_conversation(self.actor.name, title)

    def conversations(self, limit: int = 30) -> list[Conversation]:
        """The actor's own conversations, the latest first; nobody sees another's."""
        return self._runs.conversations(self.actor.name, limit)

    def turns(self, conversation: str, limit: int = 50) -> tuple[list[Turn], int]:
        """The turns of one of the actor's conversations, oldest first, and how many are
        withheld because they searched a knowledge base the actor may no longer see."""
        thread = self._runs.conversation(conversation, self.actor.name).id
        visible = {kb.name for kb in self.list_kbs()}
        shown: list[Turn] = []
        hidden = 0
        for run in self._runs.turns(thread, limit):
            if not set(run["kbs"]) <= visible:
                hidden += 1
                continue
            shown.append(
                Turn(
                    id=run["id"],
                    kind=run["kind"],
                    question=run["question"],
                    kbs=tuple(run["kbs"]),
                    answer=run["answer"],
                    trace=run["trace"],
                    started_at=run["started_at"],
                )
            )
        return shown, hidden

    def agent_context(
        self, names: Sequence[str] | None, *, top_k: int = 10, max_rounds: int = 3
    ) -> AgentContext:
        """The agentic loop's dependencies over the named knowledge bases (None: all the actor
        may see), for a caller that runs the graph itself (LangGraph Studio, cli/studio.py)."""
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        return self._agent_context(kbs, top_k=top_k, max_rounds=max_rounds)

    def _agent_context(
        self,
        kbs: Sequence[KnowledgeBase],
        *,
        top_k: int,
        max_rounds: int,
        stream: bool = False,
        offline: bool = False,
    ) -> AgentContext:
        """The agentic loop's dependencies over these knowledge bases (ask and task research);
        `stream`: the answer is shown as the model writes it (`answer_text` events); `offline`:
        without the model, whether one is configured or not."""
        llm = None if offline else self.llm
        return AgentContext(
            retrieve=lambda queries, rewrites: self._engine.search_many(
                queries, kbs, top_k=top_k, rewrites=rewrites
            ),
            answer=lambda q, evidence, aspects: grounded_answer(
                q, evidence, llm=llm, aspects=aspects, offline_aspects=offline_aspects(q)
            ),
            answer_stream=(
                (
                    lambda q, evidence, aspects, on_text: grounded_answer(
                        q,
                        evidence,
                        llm=llm,
                        aspects=aspects,
                        offline_aspects=offline_aspects(q),
                        on_text=on_text,
                    )
                )
                if stream and isinstance(llm, StreamingLLM)
                else None
            ),
            llm=llm,
            neighbours=lambda terms: self._neighbour_names(kbs, terms),
            max_rounds=max_rounds,
            kbs=[kb.name for kb in kbs],
            visible=[kb.name for kb in self.list_kbs()],
        )

    def _neighbour_names(self, kbs: Sequence[KnowledgeBase], terms: Sequence[str]) -> list[str]:
        """Names one hop from the entities the terms name: the offline refiner's new leads."""
        from .text.entity_names import normalize_entity_name

        names: list[str] = []
        for kb in kbs:
            seeds = [
                e for t in terms for e in self._graph.find_entities(kb.id, normalize_entity_name(t))
            ]
            if seeds:
                nodes, _ = self._graph.neighbourhood(kb.id, seeds, 1, limit=12)
                names += [
                    e.name for e in self._graph.entities([n for n in nodes if n not in seeds])
                ]
        return list(dict.fromkeys(names))

    # --- graph -----------------------------------------------------------------------------

    def graph_stats(self, name: str) -> GraphStats:
        return self._graph.stats(self.kb(name).id)

    def graph_file(self, name: str, fmt: GraphFormat | str) -> bytes:
        """The whole entity graph of a knowledge base as a GraphML or GEXF file (core/graph_file.py)."""
        from .graph_file import graph_file

        kb = self.kb(name)
        entities, relations = self._graph.dump(kb.id)
        if not entities:
            raise ZhixingError(
                f"{kb.name!r} has no entity graph to export; build it with --mode graph"
                " (增强知识图谱索引) first."
            )
        return graph_file(kb.name, entities, relations, GraphFormat.parse(fmt))

    def graph_view(
        self,
        name: str,
        *,
        query: str = "",
        hops: int = 1,
        types: Sequence[str] = (),
        min_degree: int = 0,
        cap: int = 300,
    ) -> GraphView:
        """What the graph page draws: the `cap` best-connected entities of the given types and
        degree, or the `hops`-neighbourhood of the entity `query` names; drawn as HTML that runs
        in a sandbox with no same-origin (core/viz.py)."""
        from .text.entity_names import normalize_entity_name
        from .viz import GraphEdge, GraphNode, render_graph

        kb = self.kb(name)
        stats = self._graph.stats(kb.id)
        graph = self._graph
        seeds = graph.find_entities(kb.id, normalize_entity_name(query)) if query.strip() else []
        left_out = 0
        if seeds:
            ids, _ = graph.neighbourhood(kb.id, seeds, hops, limit=cap)
            degree = graph.degrees(ids)
            kinds = {e.id: e.type for e in graph.entities(ids)}
            ids = [
                i
                for i in ids
                if i in seeds or ((not types or kinds[i] in types) and degree[i] >= min_degree)
            ]
        else:  # no search, or an unknown name: the whole graph (the page says which)
            ranked, total = graph.ranked_entities(
                kb.id, types=list(types), min_degree=min_degree, limit=cap
            )
            ids, left_out = [i for i, _ in ranked], total - len(ranked)
        degree = graph.degrees(ids)
        entities = {e.id: e for e in graph.entities(ids)}
        relations = graph.relations_among(list(entities))
        html = ""
        if entities:
            html = render_graph(
                [
                    GraphNode(i, e.name, e.type, degree[i], e.description)
                    for i, e in entities.items()
                ],
                [GraphEdge(r.source, r.target, r.type, r.description) for r in relations],
                highlight=seeds,
            ).embed
        order = sorted(entities, key=lambda i: (i not in seeds, -degree[i], entities[i].name))
        return GraphView(
            nodes=tuple(
                GraphNodeView(i, entities[i].name, entities[i].type, degree[i]) for i in order
            ),
            edges=len(relations),
            html=html,
            left_out=left_out,
            seeds=tuple(seeds),
            entities=stats.entities,
            relations=stats.relations,
            types=tuple(stats.types),
        )

    def entity(self, name: str, entity_id: int) -> EntityDetails:
        """One entity of a knowledge base with its relations and the chunks that mention it."""
        kb = self.kb(name)
        if not self._graph.in_kb(kb.id, [entity_id]):
            raise NotFoundError(f"{kb.name!r} has no such entity.")
        (entity,) = self._graph.entities([entity_id])
        relations = self._graph.relations_of(entity.id)
        other = {r.id: r.target if r.source == entity.id else r.source for r in relations}
        names = {e.id: e.name for e in self._graph.entities(sorted(set(other.values())))}
        shown = entity.chunks[:MAX_ENTITY_CHUNKS]
        rows = self._catalog.chunks_by_id(shown)
        chunks = []
        for chunk_id in shown:
            c = rows.get(chunk_id)
            if c is None or c["kb_id"] != kb.id:
                continue
            titled = c["title"] and c["title"] != c["source"]
            chunks.append(
                ChunkRef(
                    chunk_id=chunk_id,
                    document=f"{c['title']} ({c['source']})" if titled else c["source"],
                    ordinal=c["ordinal"] + 1,
                    page=c["page_start"] or 0,
                    line=c["line_start"] or 0,
                    text=c["text"],
                )
            )
        return EntityDetails(
            id=entity.id,
            name=entity.name,
            type=entity.type,
            description=entity.description,
            aliases=tuple(entity.aliases),
            attributes=dict(entity.attributes),
            relations=tuple(
                EntityRelation(r.type, r.source == entity.id, names.get(other[r.id], "?"))
                for r in relations
            ),
            chunks=tuple(chunks),
            total_chunks=len(entity.chunks),
        )

    def neighbourhood(
        self, name: str, entity: str, *, hops: int = 1, limit: int = 60
    ) -> Neighbourhood:
        """The K-hop neighbourhood of an entity: nodes (with the chunks that mention them) and
        edges (`to_json` is the `graph --json` shape of docs/architecture.md §9)."""
        from .text.entity_names import normalize_entity_name

        kb = self.kb(name)
        seeds = self._graph.find_entities(kb.id, normalize_entity_name(entity))
        if not seeds:
            raise NotFoundError(f"{name!r} has no entity named {entity!r}.")
        node_ids, edges = self._graph.neighbourhood(kb.id, seeds, hops, limit=limit)
        return Neighbourhood(
            nodes=[
                NeighbourNode(e.id, e.name, e.type, e.description, list(e.aliases), list(e.chunks))
                for e in self._graph.entities(node_ids)
            ],
            edges=[NeighbourEdge(r.source, r.target, r.type, r.weight) for r in edges],
        )

    def _check_embedder(self, kb: KnowledgeBase) -> None:
        if (kb.embedding, kb.dimension) != (self.embedder.name, self.embedder.dimension):
            raise ZhixingError(
                f"{kb.name!r} was built with the embedding {kb.embedding} ({kb.dimension} "
                f"dimensions) but Zhixing is configured with {self.embedder.name}; set "
                f"ZHIXING_EMBEDDING={kb.embedding} to use it."
            )

    # --- tasks ----------------------------------------------------------------------------

    def run_task(
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
        from .task.workspace import Workspace, open_workspace

        if not task.strip():
            raise ZhixingError("The task is empty.")
        thread = self._runs.conversation(conversation, self.actor.name).id if conversation else None
        kbs = self.scope(names)
        if not kbs:
            raise NotFoundError("There is no knowledge base yet; create one with `kb create`.")
        for kb in kbs:
            self._check_embedder(kb)
        runs_dir = private_dir(self.settings.home / "runs")
        with _private_folder(self.settings.home / "uploads") as staging:
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

    def task_context(
        self,
        names: Sequence[str] | None,
        *,
        workspace: Path | None = None,
        top_k: int = 8,
        max_rounds: int = 2,
    ) -> TaskContext:
        """The task agent's dependencies over the named knowledge bases, with a workspace
        folder or none, for a caller that runs the graph itself (cli/studio.py)."""
        from .task.workspace import open_workspace

        kbs = self.scope(names)
        if not kbs:
            raise NotFoundError("There is no knowledge base yet; create one with `kb create`.")
        for kb in kbs:
            self._check_embedder(kb)
        opened = None
        if workspace is not None:
            if not Path(workspace).is_dir():
                raise NotFoundError(f"The workspace {workspace} is not a folder.")
            opened = open_workspace(Path(workspace), private_dir(self.settings.home / "runs"))
        return self._task_context(kbs, opened, top_k, max_rounds)

    def _task_context(
        self,
        kbs: Sequence[KnowledgeBase],
        workspace: Workspace | None,
        top_k: int,
        max_rounds: int,
    ) -> TaskContext:
        from .task.configuration import TaskContext

        def research(text: str, sink: AskSink | None) -> AgenticResult:
            context = self._agent_context(kbs, top_k=top_k, max_rounds=max_rounds)
            return run_agentic(text, context, sink)

        chat = self.llm if isinstance(self.llm, ToolCallingLLM) else None
        return TaskContext(
            research=research,
            search=lambda query, k: self._engine.search(query, kbs, top_k=k),
            lookup=lambda query, k: self._engine.search_many(
                [query], kbs, top_k=k, rewrites=[None]
            )[0],
            workspace=workspace,
            llm=self.llm,
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
        from .task.flow import run_task

        context = self._task_context(kbs, workspace, top_k, max_rounds)
        started = time.time()
        memory = self._memory if thread else None
        # The task graph keeps its own thread beside the conversation's ask thread: two graphs
        # never read each other's checkpoints.
        tasks = f"{thread}:task" if thread else None
        result = run_task(task, context, on_event, checkpointer=memory, thread=tasks)
        if thread is not None:
            self._runs.save(
                task,
                [kb.name for kb in kbs],
                result.to_json(),
                result.events,
                started_at=started,
                owner=self.actor.name,
                conversation=thread,
                kind="task",
            )
        return result


class _Conversations:
    """The run log and the agents' checkpointer, opened on first use by whichever view of the
    service needs them first (both write: a read-only home that only searches never opens them)."""

    def __init__(self, catalog: Catalog, path: Path) -> None:
        self._catalog, self._path = catalog, path
        self._lock = threading.Lock()
        self._runs: RunStore | None = None
        self._notebooks: NotebookStore | None = None
        self._memory: Any = None

    @property
    def runs(self) -> RunStore:
        with self._lock:
            if self._runs is None:
                try:
                    self._runs = RunStore(self._catalog.db)
                except sqlite3.Error as exc:
                    raise StoreError(
                        f"The run log in {self._path.parent} cannot be written ({exc}); make the"
                        " Zhixing home writable, or set ZHIXING_HOME to a folder Zhixing may write."
                    ) from exc
            return self._runs

    @property
    def notebooks(self) -> NotebookStore:
        with self._lock:
            if self._notebooks is None:
                try:
                    self._notebooks = NotebookStore(self._catalog.db)
                except sqlite3.Error as exc:
                    raise StoreError(
                        f"The notebooks in {self._path.parent} cannot be written ({exc}); make the"
                        " Zhixing home writable, or set ZHIXING_HOME to a folder Zhixing may write."
                    ) from exc
            return self._notebooks

    @property
    def memory(self) -> Any:
        with self._lock:
            if self._memory is None:
                private_file(self._path)  # before SQLite makes it (and its -wal) by the umask
                self._memory = open_checkpointer(self._path)
            return self._memory

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.conn.close()
                self._memory = None


def _models_own(answer: object) -> bool:
    """Whether a run's answer is the model's own words (not the hits' sentences standing in)."""
    return bool(getattr(answer, "found", False)) and getattr(answer, "method", "") == "llm"


def _quoted(name: object, limit: int = 64) -> str:
    """A name a caller sent, quoted for a sentence: escaped, and cut short when it is long."""
    text = str(name)
    return repr(text[:limit]) + ("…" if len(text) > limit else "")


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
