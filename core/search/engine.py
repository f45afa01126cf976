"""Search: run the chosen strategies in parallel and fuse their rankings with RRF (DESIGN §5).

Each strategy turns a batch of queries into one ranked list of chunk ids per query. Strategies
only see integer knowledge-base ids; names were resolved in the catalog before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby

from core.embed import Embedder
from core.errors import ZhixingError
from core.models import Hit, KnowledgeBase
from core.search.fusion import reciprocal_rank_fusion
from core.store import Catalog, VectorStore
from core.store.graph import GraphStore
from core.store.vectors import VectorHit

__all__ = [
    "AVAILABLE_STRATEGIES",
    "DEFAULT_STRATEGIES",
    "STRATEGIES",
    "SearchEngine",
    "parse_strategies",
]

STRATEGIES = ("basic", "hyde", "split", "generalize", "keyword", "graph")
# hyde, split, generalize and graph need the LLM layer and the entity graph, which come later.
AVAILABLE_STRATEGIES = ("basic", "keyword")
DEFAULT_STRATEGIES = AVAILABLE_STRATEGIES

Ranked = list[list[int]]  # per query, chunk ids best first


def parse_strategies(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Validate a strategy list ("basic,keyword"); the error lists the valid names."""
    if value is None:
        return DEFAULT_STRATEGIES
    names = [s.strip() for s in (value.split(",") if isinstance(value, str) else value)]
    names = [n for n in names if n]
    if not names:
        raise ZhixingError(
            f"No search strategy was given; use one or more of {', '.join(AVAILABLE_STRATEGIES)}."
        )
    for name in names:
        if name not in STRATEGIES:
            raise ZhixingError(
                f"Unknown search strategy {name!r}; valid strategies: {', '.join(STRATEGIES)}."
            )
        if name not in AVAILABLE_STRATEGIES:
            raise ZhixingError(
                f"The {name!r} strategy is not available in this version yet; available now: "
                f"{', '.join(AVAILABLE_STRATEGIES)}."
            )
    return tuple(dict.fromkeys(names))


class SearchEngine:
    def __init__(
        self,
        catalog: Catalog,
        vectors: VectorStore,
        embedder: Embedder,
        graph: GraphStore | None = None,
    ) -> None:
        self.catalog = catalog
        self.graph = graph or GraphStore(catalog)
        self.vectors = vectors
        self.embedder = embedder
        self._pool = ThreadPoolExecutor(max_workers=len(STRATEGIES), thread_name_prefix="search")

    def search(
        self,
        query: str,
        kbs: Sequence[KnowledgeBase],
        *,
        top_k: int = 10,
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
    ) -> list[Hit]:
        """Search one query over the given knowledge bases; return fused hits, best first."""
        return self.search_many([query], kbs, top_k=top_k, strategies=strategies)[0]

    def search_many(
        self,
        queries: Sequence[str],
        kbs: Sequence[KnowledgeBase],
        *,
        top_k: int = 10,
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
    ) -> list[list[Hit]]:
        """Search a batch of queries at once (one embedding batch, one Milvus call a strategy)."""
        if any(not q.strip() for q in queries):
            raise ZhixingError("A search query is empty; type a question or some keywords.")
        if top_k < 1:
            raise ZhixingError("--top-k must be at least 1.")
        strategies = parse_strategies(list(strategies))
        if not queries:
            return []
        if not kbs:
            return [[] for _ in queries]
        depth = max(2 * top_k, 20)
        runners: dict[str, Callable[[], Ranked]] = {
            "basic": lambda: self._basic(queries, kbs, depth),
            "keyword": lambda: self._keyword(queries, kbs, depth),
        }
        futures = {name: self._pool.submit(runners[name]) for name in strategies}
        ranked = {name: future.result() for name, future in futures.items()}
        fused = [
            reciprocal_rank_fusion({name: ranked[name][i] for name in strategies})[:top_k]
            for i in range(len(queries))
        ]
        rows = self.catalog.chunks_by_id(sorted({f.item for hits in fused for f in hits}))
        return [
            [
                _hit(rows[f.item], f.score, f.ranks)
                for f in hits
                if f.item in rows and rows[f.item]["status"] == "indexed"
            ]
            for hits in fused
        ]

    # --- strategies ------------------------------------------------------------------------

    def _basic(self, queries: Sequence[str], kbs: Sequence[KnowledgeBase], depth: int) -> Ranked:
        vectors = self.embedder.embed(list(queries))
        return self._per_dimension(
            kbs,
            len(queries),
            lambda dim, ids: self.vectors.search_dense(
                dim, vectors, kbs=ids, kinds=("chunk", "question"), limit=depth
            ),
        )

    def _keyword(self, queries: Sequence[str], kbs: Sequence[KnowledgeBase], depth: int) -> Ranked:
        return self._per_dimension(
            kbs,
            len(queries),
            lambda dim, ids: self.vectors.search_bm25(
                dim, list(queries), kbs=ids, kinds=("chunk", "question"), limit=depth
            ),
        )

    def _per_dimension(
        self,
        kbs: Sequence[KnowledgeBase],
        n_queries: int,
        run: Callable[[int, list[int]], list[list[VectorHit]]],
    ) -> Ranked:
        """Run a search in each collection the knowledge bases live in, merged per query.

        Knowledge bases built with different embedding dimensions live in different
        collections; their lists are interleaved by rank so neither dominates.
        """
        per_collection: list[list[list[VectorHit]]] = []
        by_dim = sorted(kbs, key=lambda kb: kb.dimension)
        for dim, group in groupby(by_dim, key=lambda kb: kb.dimension):
            per_collection.append(run(dim, [kb.id for kb in group]))
        lists = [_interleave([result[i] for result in per_collection]) for i in range(n_queries)]
        # A question-index hit stands for the chunk that answers it.
        questions = self.graph.question_chunks(
            sorted({h.ref_id for hits in lists for h in hits if h.kind == "question"})
        )
        return [_chunk_ids(hits, questions) for hits in lists]


def _interleave(lists: list[list[VectorHit]]) -> list[VectorHit]:
    if len(lists) == 1:
        return lists[0]
    out: list[VectorHit] = []
    for rank in range(max(len(x) for x in lists)):
        out.extend(x[rank] for x in lists if rank < len(x))
    return out


def _chunk_ids(hits: list[VectorHit], questions: dict[int, int]) -> list[int]:
    """Map hits to chunk ids, best first, each chunk once at its best rank."""
    seen: dict[int, None] = {}
    for hit in hits:
        if hit.kind == "chunk":
            seen.setdefault(hit.ref_id, None)
        elif hit.kind == "question" and hit.ref_id in questions:
            seen.setdefault(questions[hit.ref_id], None)
    return list(seen)


def _hit(row: dict, score: float, ranks: dict[str, int]) -> Hit:
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
    )
