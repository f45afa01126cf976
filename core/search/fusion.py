"""Reciprocal Rank Fusion (docs/architecture.md §5), with each list weighed by what the query's results show.

Method. Plain RRF lets every list vote alike, and a list that found nothing useful still
votes: on four sets nobody here had seen, the fusion of all six fell below its best single list
on every one (issue 15). So each direct list votes with a weight read off the query at search
time, never a constant fitted to a set:

- `keyword` (BM25) votes with its match m (core/search/signals.py): the share of the
  question's terms its top hits contain, times how far they are in the question's script;
  full weight from m = `full_match` up. When its top hits are mostly in another script than
  the question (agreement below OTHER_SCRIPT, 1/2), it votes nothing: what an English question
  shares with Chinese passages is acronyms and loanwords, and with RRF's k = 60 the ranks of a
  list are so close (1/61 against 1/62) that even a vote of 0.05 for the passages those
  acronyms find reorders dense's top (ASVS glossary terms, EN -> ZH: MRR@10 0.875 with dense
  alone, 0.840 with BM25 at 0.05, 0.830 at 0.2).
- `basic` (dense) votes with what BM25 leaves unmatched, (full_match - m) / full_match, and at
  least `dense_floor`: when BM25 matched the question, dense adds nothing it does not (the
  built-in model is the weaker search in one language on every set measured); when BM25
  matched only loanwords, as for an English question over Chinese passages, dense decides.
- the documents the question names by title vote in full (a named document is as direct a
  hit as there is), and the expansions (hyde, split, generalize, graph), fused among
  themselves first because they are correlated rewrites of one question, vote at
  `expansion_weight`.
- an empty list, or one with weight 0, votes nothing.

After the fusion, `link_at` gives rank 5 to the document the top hit names by title (with
`keyword`, whose title link it extends by one hop): the second passage of a multi-hop question
("where was the director of X born?") shares no words with the question, but X's page names
it. hotpotqa-100: R@5 0.805 -> 0.895 with MRR@10 unchanged (0.926); the other eight sets,
whose documents are not named after entities, move by at most +0.002.

Measured (benchmarks/bench_quality.py --per-strategy --loso, offline, index mode, nine sets:
the three shared ones and six dev sets, English, Chinese and both cross-lingual directions,
README "Retrieval quality"): with basic + keyword the fusion is at least the better single
list on R@5 and MRR@10 on every set, within 0.001. The constants are those leave-one-set-out
chooses, and each set's left-out figure is within 0.011 of the tuned one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = [
    "RRF_K",
    "Fused",
    "FusionParams",
    "fuse_strategies",
    "fusion_params",
    "link_at",
    "list_weights",
    "reciprocal_rank_fusion",
]

RRF_K = 60
# Below this script agreement BM25's top hits are mostly written in another script than the
# question: what they share with it is loanwords and acronyms, and keyword votes nothing.
OTHER_SCRIPT = 0.5
# The rank a document named by the top hit takes (see `link_at`): the last of the first five.
LINK_RANK = 5
T = TypeVar("T", bound=Hashable)


@dataclass
class Fused(Generic[T]):
    item: T
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    ranked: Mapping[str, Sequence[T]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused[T]]:
    """Fuse ranked lists into one: score(d) = Σ over lists of w / (k + rank(d)), w = 1 unless
    `weights` says otherwise.

    Ranks are 1-based, as in Cormack et al. (2009): the top item of a list adds 1/(k+1), not 1/k.
    An item listed twice in one list counts once, at its best rank. Ties keep the order in which
    items were first seen, strategy by strategy, so the result is deterministic.
    """
    fused: dict[T, Fused[T]] = {}
    for strategy, items in ranked.items():
        for rank, item in enumerate(items, start=1):
            entry = fused.setdefault(item, Fused(item))
            if strategy in entry.ranks:
                continue
            entry.ranks[strategy] = rank
            entry.score += (weights[strategy] if weights else 1.0) / (k + rank)
    order = {item: i for i, item in enumerate(fused)}
    return sorted(fused.values(), key=lambda f: (-f.score, order[f.item]))


PRIMARY = ("basic", "keyword")
NAMED = "keyword:named"


@dataclass(frozen=True)
class FusionParams:
    """The fusion's constants, chosen leave-one-set-out (benchmarks/bench_quality.py --loso)."""

    full_match: float = 0.2  # BM25's match from which it votes in full and dense only at the floor
    dense_floor: float = 0.0
    expansion_weight: float = 0.05


# How far a dense list adds to a BM25 list that matched depends on the dense model: the
# default (USE v3) is the weaker search in one language on every set measured, so it votes at
# the floor 0 where BM25 matched; e5-small is the stronger one on hotpotqa and cmrc2018 and
# keeps half its vote (tuned on eight sets, benchmarks/bench_quality.py --loso --embedding
# e5-small; the README has the table, and where its left-out figures fall short).
_BY_EMBEDDING = {"e5-small": FusionParams(full_match=0.4, dense_floor=0.5)}


def fusion_params(embedding: str) -> FusionParams:
    """The fusion constants for a knowledge base embedded with `embedding`."""
    return _BY_EMBEDDING.get(embedding, FusionParams())


def list_weights(
    ranked: Mapping[str, Sequence[T]],
    *,
    match: float | None = None,
    agreement: float | None = None,
    params: FusionParams = FusionParams(),
) -> dict[str, float]:
    """Each direct list's vote for one query (see the module docstring); `match` is BM25's
    (None: not measured, both vote in full) and `agreement` how far its top hits are in the
    question's script. An empty list weighs nothing."""
    weights = {name: (1.0 if items else 0.0) for name, items in ranked.items()}
    if match is None or not ranked.get("keyword"):
        return weights
    if agreement is not None and agreement < OTHER_SCRIPT:
        weights["keyword"] = 0.0
        return weights
    full = max(params.full_match, 1e-9)
    weights["keyword"] = min(1.0, match / full)
    if ranked.get("basic"):
        unmatched = max(0.0, (full - match) / full)
        weights["basic"] = params.dense_floor + (1 - params.dense_floor) * unmatched
    return weights


def fuse_strategies(
    ranked: Mapping[str, Sequence[T]],
    *,
    named: Sequence[T] = (),
    match: float | None = None,
    agreement: float | None = None,
    k: int = RRF_K,
    params: FusionParams = FusionParams(),
) -> list[Fused[T]]:
    """Fuse the strategies' lists, each weighed as the module docstring says.

    `named` is what `keyword` linked by title; it votes only when `keyword` was asked for. Every
    hit reports the rank each strategy gave it (a title link counts as keyword's, where BM25
    did not rank the chunk itself). Items that only zero-weight lists hold are left out, unless
    every list weighs zero (then plain RRF: something is better than nothing).
    """
    expansions = {n: items for n, items in ranked.items() if n not in PRIMARY and items}
    lists: dict[str, Sequence[T]] = {n: ranked[n] for n in PRIMARY if n in ranked}
    weights = list_weights(lists, match=match, agreement=agreement, params=params)
    if named and "keyword" in ranked:
        lists[NAMED] = named
        weights[NAMED] = 1.0
    if expansions:
        if any(lists.values()):
            lists["expansions"] = [f.item for f in reciprocal_rank_fusion(expansions, k=k)]
            weights["expansions"] = params.expansion_weight
        else:  # only expansions were asked for: plain RRF among them
            lists, weights = dict(expansions), {n: 1.0 for n in expansions}
    scored = [f for f in reciprocal_rank_fusion(lists, k=k, weights=weights) if f.score > 0]
    if not scored:
        scored = reciprocal_rank_fusion(lists, k=k)
    provenance: dict[T, dict[str, int]] = {}
    for name, items in [*ranked.items(), ("keyword", named if "keyword" in ranked else ())]:
        for rank, item in enumerate(items, start=1):
            provenance.setdefault(item, {}).setdefault(name, rank)
    for fused in scored:
        fused.ranks = provenance.get(fused.item, {})
    return scored


def link_at(
    fused: Sequence[Fused[T]],
    linked: Sequence[T],
    *,
    document: Callable[[T], Hashable] | None = None,
    avoid: Sequence[T] = (),
    rank: int = LINK_RANK,
) -> list[Fused[T]]:
    """Give the first of `linked` (documents the top hit names) rank `rank`, unless its
    document is among the first `rank` already, or is the top hit's own or one in `avoid`.

    A multi-hop question names one document and asks about another that the first one names:
    "the director of the film X" finds X's page, and X's page names the director's. Neither
    BM25 nor the dense vector sees the director's page, which shares no words with the
    question. The link costs the weakest of the first `rank` places, which moves down one.
    Its provenance is {"link": 1}: named by hit #1.
    """
    key = document or (lambda item: item)
    if not fused or not linked:
        return list(fused)
    head = list(fused[:rank])
    taken = {key(f.item) for f in head} | {key(item) for item in avoid}
    pick = next((item for item in linked if key(item) not in taken), None)
    if pick is None:
        return list(fused)
    rest = [f for f in fused[rank - 1 :] if f.item != pick and key(f.item) != key(pick)]
    entry = Fused(pick, score=head[-1].score if len(head) >= rank else 0.0, ranks={"link": 1})
    return [*head[: rank - 1], entry, *rest]
