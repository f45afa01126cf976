"""What an `add` would cost in LLM calls and tokens and in embedding time, before it runs (a
dry pass).

The embedding time is the embedder's measured speed applied to the texts it will embed (the
chunks; with an LLM also about QUESTIONS_PER_CHUNK questions each), core/embed.py
`embedding_seconds`. Offline with a fast embedder (the default) there is nothing worth a dry
pass: no calls, and embedding is a small part of the build; `estimate_add` returns None then.

Every chunk to (re)build costs one `chunk_knowledge` call, priced exactly. In `graph` mode the
build also confirms similarity merges of entity names (`same_entity`) and summarizes entity
descriptions that grew past the limit (`summarize_description`); how many depends on what the
model extracts, so those are predicted:

* from the knowledge base's own history when it has some: the similarity merges it holds per
  chunk, and the entities whose descriptions are already long (each is summarized again when new
  chunks mention it, which the chance of a mention per chunk it already has predicts), blended
  with the defaults as if the defaults were `PRIOR_CHUNKS` chunks of history;
* else from default rates per extraction call, measured by benchmarks/bench_enrich.py on three
  corpora (OWASP cheat sheets, CWE entries, the Chinese ASVS) and checked leave-one-corpus-out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..choices import BuildMode
from ..errors import ParseError
from ..ingest import chunk_document
from ..models import KnowledgeBase
from ..store.contracts import GraphReaderProtocol
from ..store.graph_reads import MAX_DESCRIPTION
from .events import ItemFailure
from .sources import collect_files, iter_units
from .texts import embedding_text

if TYPE_CHECKING:
    from .pipeline import BuildPipeline

__all__ = [
    "DEFAULT_RATES",
    "BuildEstimate",
    "EmbeddingCost",
    "LLMCost",
    "EXTRA_ROLES",
    "PRIOR_CHUNKS",
    "estimate_add",
    "worth_estimating",
]

EXTRA_ROLES = ("same_entity", "summarize_description")


@dataclass(frozen=True)
class EmbeddingCost:
    model: str
    texts: int
    seconds: float | None  # None for an endpoint, whose speed is its own


@dataclass(frozen=True)
class LLMCost:
    calls: int  # every role
    cached: int
    prompt_tokens: int
    completion_tokens: int
    model: str
    by_role: dict[str, int]
    basis: str  # where the graph roles' figures come from: "history", "default" or "none"
    concurrency: int
    seconds: float = 0.0  # the model's time at its measured (or the slow default) rate


@dataclass(frozen=True)
class BuildEstimate:
    """What an `add` would cost: its chunks, their embedding, and with an LLM its calls."""

    chunks: int
    embedding: EmbeddingCost
    llm: LLMCost | None = None

    def to_json(self) -> dict[str, Any]:
        """The flat shape pages and scripts read: the LLM's fields beside `chunks`."""
        out: dict[str, Any] = {"chunks": self.chunks, "embedding": asdict(self.embedding)}
        return out | (asdict(self.llm) if self.llm is not None else {})


# Extra calls per `chunk_knowledge` call in graph mode, for a knowledge base without history:
# the mean of the rates measured on the three benchmark corpora (bench_enrich.py, fake server
# with contextual descriptions: cheat sheets 0.158 / 0.231, CWE 0.049 / 0.153, Chinese ASVS
# 0.171 / 0.036). Fitted on two corpora, the estimate of the third was within 14% of its calls.
DEFAULT_RATES = {"same_entity": 0.126, "summarize_description": 0.140}
# How many chunks of a knowledge base's own history weigh as much as the default rates.
PRIOR_CHUNKS = 50
# Below this speed (core/embed.py `text_units` a second) an offline build's embedding time is
# worth announcing: the built-in e5-small embeds ~900, the default model ~20,000.
SLOW_EMBEDDING = 5_000.0
# Questions an LLM writes per chunk (prompts ask for 3-5) and their size in `text_units`.
QUESTIONS_PER_CHUNK = 4
QUESTION_UNITS = 15.0
# Representative inputs, only to price one extra call in tokens (names and descriptions of
# typical length: a summary is asked for just past the limit).
_TYPICAL: dict[str, dict[str, object]] = {
    "same_entity": {
        "name_a": "Cross Site Scripting",
        "type_a": "concept",
        "description_a": "",
        "name_b": "Cross-site scripting",
        "type_b": "concept",
        "description_b": "x" * (MAX_DESCRIPTION // 2),
    },
    "summarize_description": {
        "name": "Cross Site Scripting",
        "type": "concept",
        "descriptions": "x" * (MAX_DESCRIPTION + 150),
    },
}


def worth_estimating(pipeline: BuildPipeline) -> bool:
    """Whether a build has a cost worth a dry pass: LLM calls, or a slow embedder."""
    rate = getattr(pipeline.embedder, "units_per_second", None)
    return pipeline.llm is not None or (rate is not None and rate < SLOW_EMBEDDING)


def estimate_add(
    pipeline: BuildPipeline, kb: KnowledgeBase, paths: Sequence[Path]
) -> BuildEstimate | None:
    """Estimate the LLM calls and tokens and the embedding time an `add` would cost.

    A dry pass: parse and chunk what would be (re)built, then price one extraction call per
    chunk, plus (graph mode) the predicted merge confirmations and summaries; unchanged
    documents and cached prompts cost nothing. None when not `worth_estimating`.

    Always `chunks` and `embedding`; with an LLM also `llm`, whose `basis` says where the graph
    roles' figures come from: "history" (this knowledge base's earlier builds), "default" (rates
    measured on benchmark corpora) or "none" (no graph calls).
    """
    if not worth_estimating(pipeline):
        return None
    from ..embed import embedding_seconds

    settings = pipeline.settings
    files, _ = collect_files(paths)
    states = pipeline.catalog.document_states(kb.id)
    variables: list[dict[str, Any]] = []
    texts: list[str] = []
    for unit in iter_units(files, workers=settings.workers):
        if isinstance(unit, ItemFailure):
            continue
        previous = states.get(unit.source)
        if previous and previous.unchanged(unit.sha256):
            continue
        try:
            doc = unit.load()
        except ParseError:
            continue
        for chunk in chunk_document(
            doc,
            max_units=settings.chunk_units,
            overlap_units=settings.chunk_overlap_units,
        ):
            texts.append(embedding_text(doc.title, chunk))
            if pipeline.llm is not None:
                from ..llm import chunk_knowledge_variables

                variables.append(
                    chunk_knowledge_variables(
                        chunk.text,
                        mode=kb.mode,
                        title=doc.title,
                        heading=" > ".join(chunk.heading_path),
                    )
                )
    seconds = embedding_seconds(pipeline.embedder, texts)
    if seconds is not None and pipeline.llm is not None:
        rate = getattr(pipeline.embedder, "units_per_second", 1.0)
        seconds += len(texts) * QUESTIONS_PER_CHUNK * QUESTION_UNITS / rate
    embedding = EmbeddingCost(
        model=pipeline.embedder.name,
        texts=len(texts),
        seconds=None if seconds is None else round(seconds, 1),
    )
    if pipeline.llm is None:
        return BuildEstimate(chunks=len(texts), embedding=embedding)
    from ..llm.prompts import CHUNK_KNOWLEDGE, PROMPTS

    llm = pipeline.llm
    estimate = llm.estimate(CHUNK_KNOWLEDGE, variables)
    by_role = {"chunk_knowledge": estimate["calls"], **dict.fromkeys(EXTRA_ROLES, 0)}
    basis = "none"
    if kb.mode == BuildMode.GRAPH and estimate["calls"]:
        # Cached extractions repeat a build already made: its merges and summaries are cached too.
        chunk_ids = pipeline.catalog.chunk_ids(kb.id)
        predicted, basis = predict_graph_calls(pipeline.graph, kb.id, chunk_ids, estimate["calls"])
        for role, count in predicted.items():
            by_role[role] = count
            if count:
                one = llm.estimate(PROMPTS[role], [_TYPICAL[role]])
                estimate["prompt_tokens"] += one["prompt_tokens"] * count
                estimate["completion_tokens"] += one["completion_tokens"] * count
    llm_cost = LLMCost(
        calls=sum(by_role.values()),
        cached=int(estimate["cached"]),
        prompt_tokens=int(estimate["prompt_tokens"]),
        completion_tokens=int(estimate["completion_tokens"]),
        model=str(estimate["model"]),
        by_role=by_role,
        basis=basis,
        concurrency=settings.llm_concurrency,
        seconds=_model_seconds(llm, by_role, estimate),
    )
    return BuildEstimate(chunks=len(variables), embedding=embedding, llm=llm_cost)


def predict_graph_calls(
    graph: GraphReaderProtocol, kb_id: int, chunk_ids: Sequence[int], calls: int
) -> tuple[dict[str, int], str]:
    """Predict the `same_entity` and `summarize_description` calls that `calls` extractions
    into knowledge base `kb_id` (whose chunks are `chunk_ids`) bring with them: (role -> calls,
    basis)."""
    default = {role: DEFAULT_RATES[role] * calls for role in EXTRA_ROLES}
    chunks, merges, mentions = graph.build_history(kb_id, chunk_ids)
    if not chunks:
        return {role: round(n) for role, n in default.items()}, "default"
    # Every long entity that the new chunks mention is summarized again; one with k mentions in
    # `chunks` chunks is mentioned by a new chunk with chance k / chunks. New ones grow long at
    # the rate seen so far.
    summaries = sum(1 - (1 - min(k, chunks) / chunks) ** calls for k in mentions)
    summaries += len(mentions) / chunks * calls
    history = {"same_entity": merges / chunks * calls, "summarize_description": summaries}
    weight = chunks / (chunks + PRIOR_CHUNKS)
    blended = {
        role: round(weight * history[role] + (1 - weight) * default[role]) for role in EXTRA_ROLES
    }
    return blended, "history"


def _model_seconds(llm: object, by_role: dict[str, int], estimate: dict[str, Any]) -> float:
    """The model's time for these calls at the client's measured rate; 0 for an LLM that
    cannot say (a scripted one in tests)."""
    seconds_for = getattr(llm, "seconds_for", None)
    if seconds_for is None:
        return 0.0
    calls = sum(by_role.values())
    return round(
        float(
            seconds_for(calls, int(estimate["prompt_tokens"]), int(estimate["completion_tokens"]))
        ),
        1,
    )
