"""The knowledge service: the one object the CLI and the app talk to.

It owns the catalog, the vector store, the embedder, the build pipeline and the search engine
of one Zhixing home, and speaks in knowledge-base names; everything below it speaks in ids.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from core.agentic import AgentContext, AgenticResult, run_agentic
from core.auth import LOCAL, User
from core.build import BuildPipeline, BuildReport, ProgressSink, remove_documents
from core.config import Settings
from core.embed import Embedder, make_embedder
from core.errors import AccessError, NotFoundError, StoreError, ZhixingError
from core.llm.tracing import disable_tracing
from core.models import Hit, KnowledgeBase, StoredDocument
from core.search import DEFAULT_STRATEGIES, SearchEngine
from core.search.summary import Answer, grounded_answer
from core.service_access import AccessControl
from core.store import Catalog, VectorStore
from core.store.graph import GraphStore
from core.store.runs import RunStore
from core.store.users import UserStore

__all__ = ["KnowledgeService"]


class KnowledgeService(AccessControl):
    """Every public method checks what `actor` may do (core/auth.py) before doing it: the
    service a page or a CLI command holds is `service.as_user(user)`, or the local operator."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        llm: object | None = None,
        llm_options: Mapping[str, Any] | None = None,
    ) -> None:
        """`llm` replaces the client the settings would make; `llm_options` (timeout_s,
        max_attempts, backoff_s) tune the one they make."""
        self.settings = settings
        disable_tracing()
        try:
            settings.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"The Zhixing home {settings.home} cannot be created ({exc.strerror or exc}); "
                "set ZHIXING_HOME to a folder this user may write."
            ) from exc
        self.catalog = Catalog(settings.catalog_path)
        self.actor: User = LOCAL
        self.users = UserStore(self.catalog)
        self.graph = GraphStore(self.catalog)
        self.llm = llm if llm is not None else _make_llm(settings, self.catalog, llm_options)
        self.embedder = embedder or make_embedder(settings)
        try:
            self.vectors = VectorStore(settings.resolved_milvus_uri, settings.milvus_token)
        except ZhixingError:
            self.catalog.close()
            raise
        self.pipeline = BuildPipeline(
            self.catalog, self.vectors, self.embedder, settings, graph=self.graph, llm=self.llm
        )
        self.engine = SearchEngine(
            self.catalog, self.vectors, self.embedder, self.graph, llm=self.llm
        )

    def close(self) -> None:
        self.vectors.close()
        self.catalog.close()

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
        kb = self.catalog.create_kb(
            name,
            mode=mode,
            tags=tags,
            description=description,
            embedding=self.embedder.name,
            dimension=self.embedder.dimension,
        )
        self._audit("kb.create", kb.name, mode=kb.mode)
        return kb

    def list_kbs(self) -> list[KnowledgeBase]:
        """The knowledge bases the actor may see."""
        restricted = self.users.restricted()
        return [kb for kb in self.catalog.list_kbs() if self._visible(kb, restricted)]

    def kb(self, name: str) -> KnowledgeBase:
        kb = self.catalog.get_kb(name)
        if not self._visible(kb, self.users.restricted()):
            raise AccessError(
                f"{kb.name!r} is restricted to its members and {self.actor.name} is not one; "
                "ask an admin."
            )
        return kb

    def delete_kb(self, name: str) -> None:
        """Delete a knowledge base everywhere: its vectors first, then every catalog row."""
        kb = self.kb(name)
        if not (self.actor.can("build") and not self.catalog.kb_counts(kb.id)[0]):
            # An editor may undo a create (no documents yet); anything more is an admin's.
            self.actor.require("admin", "delete knowledge bases")
        self.vectors.delete(kb.dimension, kb=kb.id)
        self.vectors.flush(kb.dimension)
        self.catalog.delete_kb(kb.id)
        self._audit("kb.delete", kb.name)

    def export_kb(self, name: str, path: Path) -> dict[str, Any]:
        """Write a knowledge base to a portable archive (core/backup); return its counts."""
        from core.backup import export_kb

        summary = export_kb(self, name, path)
        self._audit("kb.export", name, file=str(path))
        return summary

    def import_kb(self, path: Path, *, as_name: str | None = None) -> dict[str, Any]:
        """Restore an archive as a new knowledge base (re-embedded if the model differs)."""
        from core.backup import import_kb

        summary = import_kb(self, path, as_name=as_name)
        self._audit("kb.import", summary["name"], file=str(path), source=summary["source"])
        return summary

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
            report = self.pipeline.add(kb, [Path(p) for p in paths], on_event, cancel)
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

    def estimate(self, name: str, paths: Sequence[Path]) -> dict[str, Any] | None:
        """The LLM cost of adding these paths (None offline): calls, cached, tokens, model."""
        self.actor.require("build", "add documents")
        return self.pipeline.estimate(self.kb(name), [Path(p) for p in paths])

    def documents(self, name: str) -> list[StoredDocument]:
        return self.catalog.list_documents(self.kb(name).id)

    def remove(self, name: str, document: str) -> StoredDocument:
        """Remove one document and every trace of it (chunks, vectors)."""
        self.actor.require("build", "remove documents")
        kb = self.kb(name)
        doc = self.catalog.find_document(kb.id, document)
        if doc is None:
            known = [d.source for d in self.catalog.list_documents(kb.id)]
            hint = (
                f" Documents: {', '.join(known[:10])}{' …' if len(known) > 10 else ''}."
                if known
                else ""
            )
            raise NotFoundError(f"{name!r} has no document named {document!r}.{hint}")
        remove_documents(
            self.catalog, self.vectors, kb, [doc.id], graph=self.graph, embedder=self.embedder
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
    ) -> list[BuildReport]:
        """Finish the builds a kill or a lost LLM endpoint interrupted (of `name`, or all)."""
        self.actor.require("build", "add documents")
        kb = self.kb(name) if name is not None else None
        reports = self.pipeline.resume_interrupted(
            kb, job_id=job_id, on_event=on_event, cancel=cancel
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
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
    ) -> list[Hit]:
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        return self.engine.search(query, kbs, top_k=top_k, strategies=strategies)

    def search_many(
        self,
        queries: Sequence[str],
        names: Sequence[str] | None,
        *,
        top_k: int = 10,
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
    ) -> list[list[Hit]]:
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        return self.engine.search_many(queries, kbs, top_k=top_k, strategies=strategies)

    def summarize(self, question: str, hits: Sequence[Hit]) -> Answer:
        """A grounded answer from these hits only, with citations, or the not-found sentence."""
        return grounded_answer(question, hits, llm=self.llm)

    def ask(
        self,
        question: str,
        names: Sequence[str] | None,
        *,
        max_rounds: int = 3,
        top_k: int = 10,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> AgenticResult:
        """Answer a question with the agentic loop (DESIGN §6); the run and its trace are stored."""
        if not question.strip():
            raise ZhixingError("The question is empty.")
        kbs = self.scope(names)
        for kb in kbs:
            self._check_embedder(kb)
        context = self._agent_context(kbs, top_k=top_k, max_rounds=max_rounds)
        started = time.time()
        result = run_agentic(question, context, on_event)
        RunStore(self.catalog).save(
            question,
            [kb.name for kb in kbs],
            result.answer.to_json(),
            result.events,
            started_at=started,
        )
        return result

    def _agent_context(
        self, kbs: Sequence[KnowledgeBase], *, top_k: int, max_rounds: int
    ) -> AgentContext:
        """The agentic loop's dependencies over these knowledge bases (ask and task research)."""
        return AgentContext(
            retrieve=lambda queries, rewrites: self.engine.search_many(
                queries, kbs, top_k=top_k, rewrites=rewrites
            ),
            answer=lambda q, evidence, aspects: grounded_answer(
                q, evidence, llm=self.llm, aspects=aspects
            ),
            llm=self.llm,
            neighbours=lambda terms: self._neighbour_names(kbs, terms),
            max_rounds=max_rounds,
        )

    def _neighbour_names(self, kbs: Sequence[KnowledgeBase], terms: Sequence[str]) -> list[str]:
        """Names one hop from the entities the terms name: the offline refiner's new leads."""
        from core.enrich import normalize_entity_name

        names: list[str] = []
        for kb in kbs:
            seeds = [
                e for t in terms for e in self.graph.find_entities(kb.id, normalize_entity_name(t))
            ]
            if seeds:
                nodes, _ = self.graph.neighbourhood(kb.id, seeds, 1, limit=12)
                names += [e.name for e in self.graph.entities([n for n in nodes if n not in seeds])]
        return list(dict.fromkeys(names))

    # --- graph -----------------------------------------------------------------------------

    def graph_stats(self, name: str) -> dict[str, Any]:
        return self.graph.stats(self.kb(name).id)

    def neighbourhood(
        self, name: str, entity: str, *, hops: int = 1, limit: int = 60
    ) -> dict[str, Any]:
        """The K-hop neighbourhood of an entity: nodes (with the chunks that mention them) and
        edges, in the `graph --json` shape of DESIGN §9."""
        from core.enrich import normalize_entity_name

        kb = self.kb(name)
        seeds = self.graph.find_entities(kb.id, normalize_entity_name(entity))
        if not seeds:
            raise NotFoundError(f"{name!r} has no entity named {entity!r}.")
        node_ids, edges = self.graph.neighbourhood(kb.id, seeds, hops, limit=limit)
        nodes = [
            {
                "id": e.id,
                "name": e.name,
                "type": e.type,
                "description": e.description,
                "aliases": e.aliases,
                "chunks": e.chunks,
            }
            for e in self.graph.entities(node_ids)
        ]
        return {
            "nodes": nodes,
            "edges": [
                {"source": r.source, "target": r.target, "type": r.type, "weight": r.weight}
                for r in edges
            ],
        }

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
        workspace: Path | Any | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        max_rounds: int = 2,
        top_k: int = 8,
    ) -> Any:
        """Carry out a task with the task agent (DESIGN §7) and return its `TaskResult`.

        `workspace` is a folder (used as it is), an archive (unpacked into a new folder under
        `$ZHIXING_HOME/runs`), a `Workspace`, or None (the task only consults the knowledge).
        """
        from core.agent.configuration import TaskContext
        from core.agent.graph import run_task
        from core.agent.workspace import Workspace, open_workspace

        if not task.strip():
            raise ZhixingError("The task is empty.")
        kbs = self.scope(names)
        if not kbs:
            raise NotFoundError("There is no knowledge base yet; create one with `kb create`.")
        for kb in kbs:
            self._check_embedder(kb)
        if workspace is not None and not isinstance(workspace, Workspace):
            workspace = open_workspace(Path(workspace), self.settings.home / "runs")

        def research(text: str, sink: Callable[[dict[str, Any]], None] | None) -> AgenticResult:
            context = self._agent_context(kbs, top_k=top_k, max_rounds=max_rounds)
            return run_agentic(text, context, sink)

        chat = self.llm if hasattr(self.llm, "invoke_tools") else None
        context = TaskContext(
            research=research,
            search=lambda query, k: self.engine.search(query, kbs, top_k=k),
            workspace=workspace,
            llm=self.llm,
            chat=chat,
            knowledge_bases=[kb.name for kb in kbs],
        )
        return run_task(task, context, on_event)


def _make_llm(
    settings: Settings, catalog: Catalog, options: Mapping[str, Any] | None
) -> object | None:
    """The LLM client when an endpoint is configured; None means the offline heuristics."""
    if not settings.llm_configured:
        return None
    from core.llm import LLMCache, LLMClient

    return LLMClient(settings, LLMCache(catalog), **dict(options or {}))
