"""The six search strategies (docs/architecture.md §5). Each turns one query into a ranked list of chunk ids.

`basic` and `keyword` search the index as asked (`keyword` also links the documents the question
names by title, core/search/titles.py); `hyde`, `split` and `generalize` search it with
rewrites of the question; `graph` links the question to entities and ranks the chunks that
mention what a K-hop walk reaches, so over a knowledge base without a graph it finds nothing. A strategy that has nothing to add for a query (no parts to
split, no broader concept, no linked entity) returns an empty list: an empty list adds nothing to
the fusion, while a padded one would only dilute the strategies that did find something.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..embed import Embedder, embed_queries
from ..models import KnowledgeBase
from ..store import Catalog, VectorStore
from ..store.graph import GraphStore
from ..store.vectors import VectorHit
from ..text.entity_names import normalize_entity_name
from ..text.language import is_chinese
from .languages import OTHER_REACH, in_chinese, without_names
from .query_terms import key_terms
from .registry import Ranked, StrategyInput, register
from .rewrite import QueryRewrites
from .signals import KeywordSignal, keyword_signal
from .titles import TitleIndex

__all__ = ["GRAPH_HOPS", "StrategyRunner"]

GRAPH_HOPS = 2
# Entity embeddings closer than this to the question link it to the entity.
_ENTITY_LINK = 0.45
_HOP_WEIGHT = (1.0, 0.5, 0.25)
_PRF_DOCS = 3  # offline hyde: pseudo-relevance feedback from the top basic hits
# Dense searches rank chunks only. Question-index vectors in the same list crowd chunks out:
# a chunk has 5-12 questions phrased like the user's, so they take the top slots (hotpotqa-100,
# offline: dense R@5 0.715 over chunks, 0.66 over chunks and questions). The question index
# still answers through `keyword`, where BM25 weighs its terms against the chunks'.
_DENSE_KINDS = ("chunk",)


@dataclass
class StrategyRunner:
    """Run the strategies for a batch of queries over a set of knowledge bases."""

    catalog: Catalog
    vectors: VectorStore
    embedder: Embedder
    graph: GraphStore
    kbs: Sequence[KnowledgeBase]
    depth: int
    to_chunks: Callable[[list[list[VectorHit]]], list[list[int]]]
    dense: Callable[[np.ndarray, Sequence[str], int], list[list[VectorHit]]]  # kinds, limit
    bm25: Callable[[Sequence[str]], list[list[VectorHit]]]
    titles: TitleIndex

    def basic(self, vectors: np.ndarray) -> list[list[int]]:
        return self.to_chunks(self.dense(vectors, _DENSE_KINDS, self.depth))

    def other_language(self, vectors: np.ndarray, queries: Sequence[str]) -> list[list[int]]:
        """Per query, the best chunks in the other language than its own, where the dense
        search reaches both languages; else none (core/search/languages.py)."""
        bare = [without_names(q) for q in queries]
        changed = [i for i, (q, b) in enumerate(zip(queries, bare, strict=True)) if q != b]
        own = np.array(vectors, copy=True)
        if changed:
            own[changed] = embed_queries(self.embedder, [bare[i] for i in changed])
        reach = self.to_chunks(self.dense(own, _DENSE_KINDS, OTHER_REACH))
        rows = self.catalog.chunks_by_id(sorted({c for row in reach for c in row}))
        chinese = {c: in_chinese(rows[c]["text"]) for c in rows}
        out = []
        for query, row in zip(queries, reach, strict=True):
            asked = is_chinese(query)
            other = [c for c in row if c in chinese and chinese[c] != asked]
            # A corpus all in the other language (English questions over a Chinese standard)
            # is what the dense list ranks already: no slot.
            mixed = any(chinese.get(c) == asked for c in row)
            out.append(other if mixed else [])
        return out

    def keyword(
        self, queries: Sequence[str], rewrites: Sequence[QueryRewrites]
    ) -> tuple[list[list[int]], list[KeywordSignal]]:
        """BM25 with the question and its keywords; also how much of the question it matched
        (core/search/signals.py), which decides its weight in the fusion."""
        texts = []
        for query, rewrite in zip(queries, rewrites, strict=True):
            words = [query, *rewrite.keywords] if rewrite.keywords else [query]
            texts.append(" ".join(words))
        hits = self.bm25(texts)
        version = min((kb.analysis for kb in self.kbs), default=1)
        signals = [
            keyword_signal(q, [h.text for h in row], version=version)
            for q, row in zip(queries, hits, strict=True)
        ]
        return self.to_chunks(hits), signals

    def hyde(
        self, queries: Sequence[str], rewrites: Sequence[QueryRewrites], basic: list[list[int]]
    ) -> list[list[int]]:
        """Search with a hypothetical answer; offline, with the query enriched by its top hits."""
        texts = []
        for query, rewrite, top in zip(queries, rewrites, basic, strict=True):
            if rewrite.hypothetical_answer:
                texts.append(f"{query}\n{rewrite.hypothetical_answer}")
                continue
            rows = self.catalog.chunks_by_id(top[:_PRF_DOCS])
            feedback = " ".join(rows[c]["text"][:300] for c in top[:_PRF_DOCS] if c in rows)
            texts.append(f"{query}\n{feedback}" if feedback else "")
        return self._dense_texts(texts)

    def split(self, rewrites: Sequence[QueryRewrites]) -> list[list[int]]:
        """Search each sub-question; interleave their lists so every part is represented."""
        parts = [list(r.sub_questions) for r in rewrites]
        flat = [p for ps in parts for p in ps]
        if not flat:
            return [[] for _ in rewrites]
        lists = self.to_chunks(
            self.dense(embed_queries(self.embedder, flat), _DENSE_KINDS, self.depth)
        )
        out, i = [], 0
        for ps in parts:
            own = lists[i : i + len(ps)]
            i += len(ps)
            out.append(_interleave(own)[: self.depth])
        return out

    def generalize(
        self, queries: Sequence[str], rewrites: Sequence[QueryRewrites]
    ) -> list[list[int]]:
        """Search one level up: the LLM's generalization, or the linked entities' broader concepts."""
        texts = []
        for query, rewrite in zip(queries, rewrites, strict=True):
            if rewrite.generalization:
                texts.append(rewrite.generalization)
                continue
            seeds = self._linked_by_name(query)
            parents = self.graph.broader(seeds)
            texts.append(" ".join(parents) if parents else "")
        return self._dense_texts(texts)

    def named(self, queries: Sequence[str]) -> list[list[int]]:
        """Per query, the lead chunks of the documents it names by title (keyword's link)."""
        return [self.titles.named(query, self.kbs) for query in queries]

    def graph_walk(self, queries: Sequence[str], vectors: np.ndarray) -> list[list[int]]:
        """Link the question to entities, walk K hops, rank the chunks that mention what the
        walk reached by hop weight. Nothing without a graph, or when no entity is linked."""
        linked = self._linked_by_vector(vectors)
        ranked_lists = []
        for query, by_vector in zip(queries, linked, strict=True):
            seeds = list(dict.fromkeys([*self._linked_by_name(query), *by_vector]))
            scores: dict[int, float] = {}
            if seeds:
                levels = self._levels(seeds)
                for entity_id, chunk_id in self.graph.mentions_of(list(levels)):
                    scores[chunk_id] = scores.get(chunk_id, 0.0) + _HOP_WEIGHT[levels[entity_id]]
            ranked_lists.append(sorted(scores, key=lambda c: (-scores[c], c))[: self.depth])
        return ranked_lists

    # --- helpers ---------------------------------------------------------------------------

    def _dense_texts(self, texts: list[str]) -> list[list[int]]:
        """Dense search for the non-empty texts; an empty text gives an empty list."""
        wanted = [i for i, t in enumerate(texts) if t.strip()]
        out: list[list[int]] = [[] for _ in texts]
        if wanted:
            lists = self.to_chunks(
                self.dense(
                    embed_queries(self.embedder, [texts[i] for i in wanted]),
                    _DENSE_KINDS,
                    self.depth,
                )
            )
            for i, ranked in zip(wanted, lists, strict=True):
                out[i] = ranked
        return out

    def _linked_by_name(self, query: str) -> list[int]:
        """Entities whose name or alias is a term of the question (or two adjacent terms)."""
        terms = key_terms(query)
        candidates = [
            *terms,
            *(a + b for a, b in zip(terms, terms[1:], strict=False)),
            *(f"{a} {b}" for a, b in zip(terms, terms[1:], strict=False)),
        ]
        found: list[int] = []
        for kb in self.kbs:
            for term in candidates:
                found.extend(self.graph.find_entities(kb.id, normalize_entity_name(term)))
        return list(dict.fromkeys(found))

    def _linked_by_vector(self, vectors: np.ndarray) -> list[list[int]]:
        hits = self.dense(vectors, ("entity",), self.depth)
        return [[h.ref_id for h in row[:5] if h.score >= _ENTITY_LINK] for row in hits]

    def _levels(self, seeds: list[int]) -> dict[int, int]:
        """Hop distance of every entity reached from the seeds within GRAPH_HOPS."""
        levels = {s: 0 for s in seeds}
        for kb in self.kbs:
            nodes, edges = self.graph.neighbourhood(kb.id, seeds, GRAPH_HOPS, limit=60)
            adjacency: dict[int, set[int]] = {}
            for e in edges:
                adjacency.setdefault(e.source, set()).add(e.target)
                adjacency.setdefault(e.target, set()).add(e.source)
            frontier = [s for s in seeds if s in nodes]
            for hop in range(1, GRAPH_HOPS + 1):
                nxt = []
                for node in frontier:
                    for other in adjacency.get(node, ()):
                        if other not in levels:
                            levels[other] = hop
                            nxt.append(other)
                frontier = nxt
        return levels


def _interleave(lists: list[list[int]]) -> list[int]:
    seen: dict[int, None] = {}
    for rank in range(max((len(x) for x in lists), default=0)):
        for ranked in lists:
            if rank < len(ranked):
                seen.setdefault(ranked[rank], None)
    return list(seen)


# --- the registered strategies (core/search/registry.py) -------------------------------------


@register("graph")
def _graph(batch: StrategyInput) -> Ranked:
    return batch.runner.graph_walk(batch.queries, batch.vectors)


@register("split", needs=("rewrites",))
def _split(batch: StrategyInput) -> Ranked:
    return batch.runner.split(batch.rewrites)


@register("generalize", needs=("rewrites",))
def _generalize(batch: StrategyInput) -> Ranked:
    return batch.runner.generalize(batch.queries, batch.rewrites)


@register("hyde", needs=("rewrites", "basic"))  # offline it feeds back the top basic hits
def _hyde(batch: StrategyInput) -> Ranked:
    return batch.runner.hyde(batch.queries, batch.rewrites, batch.basic or [])
