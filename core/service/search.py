"""Search: the six strategies fused, a grounded answer over hits, and the agentic loop
(docs/architecture.md §5–6), over the knowledge bases the actor may see."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..answer import NOTE_OFFLINE_FOUND, Answer, grounded_answer
from ..ask import AgentContext, AgenticResult, run_agentic
from ..ask.nodes import offline_aspects
from ..errors import ZhixingError
from ..llm.protocol import StreamingLLM
from ..models import Hit, KnowledgeBase
from ..text.entity_names import normalize_entity_name
from ..trace import AskSink
from .access import Access

__all__ = ["Search"]

log = logging.getLogger(__name__)


class Search:
    def __init__(self, access: Access) -> None:
        self._access, self._home = access, access.home

    def scope(self, names: Sequence[str] | None) -> list[KnowledgeBase]:
        """Resolve knowledge-base names (None or ["@all"] = all) to knowledge bases."""
        return self._access.scope(names)

    def query(
        self,
        query: str,
        names: Sequence[str] | None,
        *,
        top_k: int = 10,
        strategies: Sequence[str] | None = None,
    ) -> list[Hit]:
        kbs = self._access.searchable(names)
        return self._home.engine.search(query, kbs, top_k=top_k, strategies=strategies)

    def many(
        self,
        queries: Sequence[str],
        names: Sequence[str] | None,
        *,
        top_k: int = 10,
        strategies: Sequence[str] | None = None,
    ) -> list[list[Hit]]:
        """One list of hits a query, the queries' strategies run together."""
        kbs = self._access.searchable(names)
        return self._home.engine.search_many(queries, kbs, top_k=top_k, strategies=strategies)

    def default_strategies(self) -> tuple[str, ...]:
        """The strategies a search runs when none are chosen: all six with an LLM, else the
        two direct searches (core/search/engine.py OFFLINE_STRATEGIES)."""
        return self._home.engine.default_strategies()

    def summarize(
        self, question: str, hits: Sequence[Hit], *, on_text: Callable[[str], None] | None = None
    ) -> Answer:
        """A grounded answer from these hits only, with citations, or the not-found sentence;
        `on_text` gets the text so far as a model that streams writes it."""
        return grounded_answer(question, hits, llm=self._home.llm, on_text=on_text)

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
        """Answer a question with the agentic loop (docs/architecture.md §6); the run and its
        trace are stored as the actor's. In one of the actor's conversations the question is
        read with the earlier turns ("and for level 3?"), through the conversation's LangGraph
        thread."""
        if not question.strip():
            raise ZhixingError("The question is empty.")
        home, owner = self._home, self._access.actor.name
        thread = home.runs.conversation(conversation, owner).id if conversation else None
        kbs = self._access.searchable(names)
        context = self.context(kbs, top_k=top_k, max_rounds=max_rounds, stream=True)
        started = time.time()
        result = run_agentic(
            question,
            context,
            on_event,
            checkpointer=home.memory if thread else None,
            thread=thread,
        )
        if home.llm is not None and not _models_own(result.answer):
            result = self._offline_instead(result, question, kbs, top_k, max_rounds)
        home.runs.save(
            question,
            [kb.name for kb in kbs],
            result.answer.to_json(),
            result.events,
            started_at=started,
            owner=owner,
            conversation=thread,
        )
        return result

    def agent_context(
        self, names: Sequence[str] | None, *, top_k: int = 10, max_rounds: int = 3
    ) -> AgentContext:
        """The agentic loop's dependencies over the named knowledge bases (None: all the actor
        may see), for a caller that runs the graph itself (LangGraph Studio, cli/studio.py)."""
        kbs = self._access.searchable(names)
        return self.context(kbs, top_k=top_k, max_rounds=max_rounds)

    def context(
        self,
        kbs: Sequence[KnowledgeBase],
        *,
        top_k: int,
        max_rounds: int,
        stream: bool = False,
        offline: bool = False,
    ) -> AgentContext:
        """The agentic loop's dependencies over these (checked) knowledge bases, for ask and
        the task agent's research; `stream`: the answer is shown as the model writes it
        (`answer_text` events); `offline`: without the model, whether one is configured or not."""
        engine = self._home.engine
        llm = None if offline else self._home.llm
        return AgentContext(
            retrieve=lambda queries, rewrites: engine.search_many(
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
            visible=[kb.name for kb in self._access.list_kbs()],
        )

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
            self.context(kbs, top_k=top_k, max_rounds=max_rounds, offline=True),
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

    def _neighbour_names(self, kbs: Sequence[KnowledgeBase], terms: Sequence[str]) -> list[str]:
        """Names one hop from the entities the terms name: the offline refiner's new leads."""
        graph = self._home.graph
        names: list[str] = []
        for kb in kbs:
            seeds = [e for t in terms for e in graph.find_entities(kb.id, normalize_entity_name(t))]
            if seeds:
                nodes, _ = graph.neighbourhood(kb.id, seeds, 1, limit=12)
                names += [e.name for e in graph.entities([n for n in nodes if n not in seeds])]
        return list(dict.fromkeys(names))


def _models_own(answer: object) -> bool:
    """Whether a run's answer is the model's own words (not the hits' sentences standing in)."""
    return bool(getattr(answer, "found", False)) and getattr(answer, "method", "") == "llm"
