"""Search: run the chosen strategies in parallel and fuse their rankings with RRF (docs/architecture.md §5).

Each strategy turns a batch of queries into one ranked list of chunk ids per query. Strategies
only see integer knowledge-base ids; names were resolved in the catalog before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..choices import DocumentState, Strategy
from ..embed import Embedder, embed_queries
from ..errors import ZhixingError
from ..models import Hit, KnowledgeBase
from ..store import Catalog, VectorStore
from ..store.analysis import bm25_text
from ..store.graph import GraphStore
from ..store.vectors import VectorHit
from ..text.navigation import is_navigation
from .fusion import (
    LINK_RANK,
    Fused,
    FusionParams,
    fuse_strategies,
    fusion_params,
    link_at,
)
from .languages import give_places
from .registry import Ranked, RegisteredStrategy, StrategyInput, parse_strategies, registered
from .rewrite import QueryRewrites, offline_rewrites, rewrite_queries
from .signals import KeywordSignal
from .strategies import StrategyRunner
from .titles import TitleIndex

__all__ = [
    "AVAILABLE_STRATEGIES",
    "DEFAULT_STRATEGIES",
    "OFFLINE_STRATEGIES",
    "STRATEGIES",
    "StrategyLists",
    "SearchEngine",
    "content_first",
    "parse_strategies",
]

STRATEGIES = tuple(s.value for s in Strategy)  # basic, hyde, split, generalize, keyword, graph
AVAILABLE_STRATEGIES = STRATEGIES
# With an LLM every strategy is a real rewrite of the question and all six run. Offline, hyde,
# split, generalize and graph are rules (pseudo-relevance feedback, conjunction splits, broader
# concepts, a heuristic graph) and none gained on two sets in both languages
# (benchmarks/bench_quality.py --per-strategy; README "Retrieval quality"), so the offline
# default is the two direct searches; the others stay selectable.
DEFAULT_STRATEGIES = STRATEGIES
OFFLINE_STRATEGIES = (Strategy.BASIC.value, Strategy.KEYWORD.value)

log = logging.getLogger(__name__)

# BM25 searches chunks and the question index; its hits bring their indexed text for the
# fusion's signal (core/search/signals.py).
_KEYWORD_KINDS = ("chunk", "question")


@dataclass
class StrategyLists:
    """What the strategies returned for a batch of queries, before fusion."""

    ranked: dict[str, Ranked]  # per strategy, per query
    named: Ranked  # per query, the chunks `keyword` linked by title
    # per query, what BM25's top hits say of it (core/search/signals.py); None without keyword
    signals: list[KeywordSignal | None]
    seconds: dict[str, float] = field(default_factory=dict)  # per strategy, its wall time
    # per query, the best chunks in the other language, where both are within dense's reach
    other: Ranked = field(default_factory=list)

    def fuse(self, i: int, params: FusionParams | None = None) -> list[Fused[int]]:
        signal = self.signals[i]
        return fuse_strategies(
            {name: lists[i] for name, lists in self.ranked.items()},
            named=self.named[i],
            match=signal.match if signal else None,
            agreement=signal.agreement if signal else None,
            params=params or FusionParams(),
        )


class SearchEngine:
    def __init__(
        self,
        catalog: Catalog,
        vectors: VectorStore,
        embedder: Embedder,
        graph: GraphStore | None = None,
        llm: object | None = None,
    ) -> None:
        self.catalog = catalog
        self.llm = llm
        self.graph = graph or GraphStore(catalog.db)
        self.vectors = vectors
        self.embedder = embedder
        self.titles = TitleIndex(catalog)
        self.fusion = fusion_params(embedder.name)
        self._pool = ThreadPoolExecutor(max_workers=len(STRATEGIES), thread_name_prefix="search")

    def search(
        self,
        query: str,
        kbs: Sequence[KnowledgeBase],
        *,
        top_k: int = 10,
        strategies: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Search one query over the given knowledge bases; return fused hits, best first."""
        return self.search_many([query], kbs, top_k=top_k, strategies=strategies)[0]

    def search_many(
        self,
        queries: Sequence[str],
        kbs: Sequence[KnowledgeBase],
        *,
        top_k: int = 10,
        strategies: Sequence[str] | None = None,
        rewrites: Sequence[QueryRewrites | None] | None = None,
    ) -> list[list[Hit]]:
        """Search a batch of queries at once (one embedding batch, one Milvus call a strategy).

        `strategies` None runs `default_strategies()`.

        `rewrites`, one per query, are rewrites written already (by the agentic loop's plan or
        refine call): given, the search makes no LLM call, and a None entry uses the rules.
        """
        if any(not q.strip() for q in queries):
            raise ZhixingError("A search query is empty; type a question or some keywords.")
        if top_k < 1:
            raise ZhixingError("--top-k must be at least 1.")
        strategies = (
            self.default_strategies() if strategies is None else parse_strategies(list(strategies))
        )
        if not queries:
            return []
        if not kbs:
            return [[] for _ in queries]
        depth = max(2 * top_k, 20)
        if rewrites is not None and len(rewrites) != len(queries):
            raise ValueError("search_many needs one rewrite (or None) per query")
        started = time.perf_counter()
        lists = self.strategy_lists(list(queries), kbs, depth, strategies, rewrites)
        log.info(
            "searched %d %s in %d knowledge %s in %.2f s (%s)",
            len(queries),
            "query" if len(queries) == 1 else "queries",
            len(kbs),
            "base" if len(kbs) == 1 else "bases",
            time.perf_counter() - started,
            ", ".join(f"{name} {s:.2f} s" for name, s in lists.seconds.items()),
        )
        fused = [lists.fuse(i, self.fusion) for i in range(len(queries))]
        if "keyword" in strategies:
            fused = self._link(fused, lists.named, kbs)
        fused = [give_places(hits, lists.other[i], top_k)[:top_k] for i, hits in enumerate(fused)]
        rows = self.catalog.chunks_by_id(sorted({f.item for hits in fused for f in hits}))
        return [
            content_first(
                [
                    _hit(rows[f.item], f.score, f.ranks)
                    for f in hits
                    if f.item in rows and rows[f.item]["status"] == DocumentState.INDEXED
                ]
            )
            for hits in fused
        ]

    def _link(
        self, fused: list[list[Fused[int]]], named: Ranked, kbs: Sequence[KnowledgeBase]
    ) -> list[list[Fused[int]]]:
        """Per query, the document its top hit names by title at rank 5 (fusion.link_at)."""
        heads = {f.item for hits in fused for f in hits[:LINK_RANK]}
        rows = self.catalog.chunks_by_id(sorted(heads))
        out = []
        for hits, own in zip(fused, named, strict=True):
            top = rows.get(hits[0].item) if hits else None
            if top is None:
                out.append(hits)
                continue
            linked = self.titles.linked(top["text"], kbs)
            document = {c: rows[c]["document_id"] for c in (f.item for f in hits) if c in rows}
            document.update(linked)
            out.append(
                link_at(
                    hits,
                    [chunk for chunk, _ in linked],
                    document=partial(_document_of, document),
                    avoid=own,
                )
            )
        return out

    # --- strategies ------------------------------------------------------------------------

    def default_strategies(self) -> tuple[str, ...]:
        """All six with an LLM; offline the two direct searches (see OFFLINE_STRATEGIES)."""
        return DEFAULT_STRATEGIES if self.llm is not None else OFFLINE_STRATEGIES

    def strategy_lists(
        self,
        queries: list[str],
        kbs: Sequence[KnowledgeBase],
        depth: int,
        strategies: Sequence[str],
        given: Sequence[QueryRewrites | None] | None = None,
    ) -> StrategyLists:
        """Run the strategies, in parallel where they do not depend on one another.

        Returns each strategy's ranked lists, per query the chunks `keyword` linked by title,
        and how much of each query BM25 matched (the fusion's signal).
        """
        ids = [kb.id for kb in kbs]
        dim = kbs[0].dimension  # every knowledge base in scope shares the service's embedder
        runner = StrategyRunner(
            catalog=self.catalog,
            vectors=self.vectors,
            embedder=self.embedder,
            graph=self.graph,
            kbs=kbs,
            depth=depth,
            to_chunks=self._to_chunks,
            dense=lambda v, kinds, limit: self.vectors.search_dense(
                dim, v, kbs=ids, kinds=kinds, limit=limit
            ),
            bm25=lambda texts: self._bm25(dim, list(texts), kbs, depth),
            titles=self.titles,
        )
        seconds: dict[str, float] = {}

        def timed(name: str, fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
            def run() -> Any:
                start = time.perf_counter()
                try:
                    return fn(*args)
                finally:
                    seconds[name] = time.perf_counter() - start

            return run

        plugged = registered(strategies)
        wants_rewrites = "keyword" in strategies or any("rewrites" in s.needs for s in plugged)
        if given is not None:
            rewrites_f = self._pool.submit(
                lambda: [r or offline_rewrites(q) for q, r in zip(queries, given, strict=True)]
            )
        else:
            rewrites_f = self._pool.submit(
                timed("rewrites", rewrite_queries, queries, self.llm if wants_rewrites else None)
            )
        vectors = timed("embedding", embed_queries, self.embedder, queries)()
        basic_f = self._pool.submit(timed("basic", runner.basic, vectors))
        other_f = (
            self._pool.submit(runner.other_language, vectors, list(queries))
            if "basic" in strategies
            else None
        )
        futures: dict[str, Future[Ranked]] = {}

        def start(ready: list[RegisteredStrategy], batch: StrategyInput) -> None:
            for s in ready:
                futures[s.name] = self._pool.submit(timed(s.name, s.run, batch))

        # Each registered strategy starts as soon as what it needs is in (core/search/registry.py).
        batch = StrategyInput(runner, list(queries), vectors)
        start([s for s in plugged if not s.needs], batch)
        rewrites = rewrites_f.result()
        keyword_f = (
            self._pool.submit(timed("keyword", runner.keyword, queries, rewrites))
            if "keyword" in strategies
            else None
        )
        batch = replace(batch, rewrites=rewrites)
        start([s for s in plugged if s.needs == {"rewrites"}], batch)
        basic = basic_f.result()
        start([s for s in plugged if "basic" in s.needs], replace(batch, basic=basic))
        named: Ranked = runner.named(queries) if "keyword" in strategies else [[] for _ in queries]
        ranked = {name: f.result() for name, f in futures.items()}
        ranked["basic"] = basic
        signals: list[KeywordSignal | None] = [None for _ in queries]
        if keyword_f is not None:
            ranked["keyword"], found = keyword_f.result()
            signals = list(found)
        other = other_f.result() if other_f is not None else [[] for _ in queries]
        return StrategyLists(
            {name: ranked[name] for name in strategies}, named, signals, seconds, other
        )

    def _bm25(
        self, dim: int, texts: list[str], kbs: Sequence[KnowledgeBase], depth: int
    ) -> list[list[VectorHit]]:
        """BM25 over chunks and questions, each query analysed as its knowledge base's index was.

        Knowledge bases of different analysis versions (only after an upgrade) are searched
        apart and their lists merged by BM25 score, which is comparable within one collection.
        """
        groups: dict[int, list[int]] = {}
        for kb in kbs:
            groups.setdefault(kb.analysis, []).append(kb.id)
        merged: list[list[VectorHit]] = [[] for _ in texts]
        for version, ids in groups.items():
            # A query of stop words only ("what is it") keeps its words rather than none.
            queries = [bm25_text(t, version) or t for t in texts]
            lists = self.vectors.search_bm25(
                dim, queries, kbs=ids, kinds=_KEYWORD_KINDS, limit=depth, with_text=True
            )
            for row, hits in zip(merged, lists, strict=True):
                row.extend(hits)
        if len(groups) > 1:  # Milvus Lite reports BM25 negated: the lowest score is the best
            merged = [sorted(row, key=lambda h: h.score)[:depth] for row in merged]
        return merged

    def _to_chunks(self, lists: list[list[VectorHit]]) -> Ranked:
        """Map vector hits to chunk ids; a question-index hit stands for its chunk."""
        questions = self.graph.question_chunks(
            sorted({h.ref_id for hits in lists for h in hits if h.kind == "question"})
        )
        return [_chunk_ids(hits, questions) for hits in lists]


def _chunk_ids(hits: list[VectorHit], questions: dict[int, int]) -> list[int]:
    """Map hits to chunk ids, best first, each chunk once at its best rank."""
    seen: dict[int, None] = {}
    for hit in hits:
        if hit.kind == "chunk":
            seen.setdefault(hit.ref_id, None)
        elif hit.kind == "question" and hit.ref_id in questions:
            seen.setdefault(questions[hit.ref_id], None)
    return list(seen)


def content_first(hits: Sequence[Hit]) -> list[Hit]:
    """The hits with navigation (a table of contents, an index: core/text/navigation.py) moved
    after content, each part in its fused order. A contents page names every topic and matches
    every question; it stays among the hits, findable, but below the passages that answer."""
    navigation = [is_navigation(hit.text) for hit in hits]
    return [h for h, nav in zip(hits, navigation, strict=True) if not nav] + [
        h for h, nav in zip(hits, navigation, strict=True) if nav
    ]


def _hit(row: dict[str, Any], score: float, ranks: dict[str, int]) -> Hit:
    return Hit(
        chunk_id=row["id"],
        score=score,
        document=row["source"],
        title=row["title"],
        page=row["page_start"],
        text=row["text"],
        strategies=dict(ranks),
        heading_path=row["heading_path"],
        line_start=row["line_start"],
        line_end=row["line_end"],
        kb=row["kb"],
        ocr=bool(row.get("ocr", 0)),
    )


def _document_of(documents: Mapping[int, int], chunk: int) -> Hashable:
    """The document a chunk belongs to, for the title link (an unknown chunk stands alone)."""
    return documents.get(chunk, ("chunk", chunk))
