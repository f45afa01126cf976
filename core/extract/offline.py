"""Fill the LLM's knowledge role without an LLM: questions, entities and relations of a chunk.

`offline_knowledge` returns the same `ChunkKnowledge` the LLM role returns (docs/architecture.md §4), built by
deterministic rules: the chunk is cut into segments (`text`), its terms found (`terms`), ranked
by frequency times specificity, linked by patterns and co-occurrence (`relations`), and asked
about (`questions`). The same input always gives the same output.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..choices import BuildMode
from ..llm.schemas import (
    ChunkKnowledge,
    ExtractedEntity,
    ExtractedRelation,
    IndexQuestion,
)
from .find_terms import Mention, find_mentions, normalize_entity_name, top_level
from .questions import build_questions, context_for, display_clause
from .relations import Link, co_occurring, pattern_links
from .segments import Segment, is_chinese_segments, requirement_of, segment_text

__all__ = ["MODES", "offline_knowledge"]

MODES = ("graph", "index")
MAX_ENTITIES = 20  # besides the clause ids of requirement rows, which are all kept
MAX_PATTERN_ENDPOINTS = 10  # entities a relation pattern may add beyond those
MAX_RELATED = 40  # co-occurrence edges per chunk
_DESCRIPTION_CHARS = 200
# When mentions of one name disagree on its type, the more specific type wins.
_TYPE_ORDER = (
    "weakness",
    "vulnerability",
    "standard",
    "clause",
    "control",
    "artifact",
    "technology",
    "organization",
    "concept",
)
_ASVS_REFERENCE = re.compile(r"\s*\((?:C\d+(?:,\s*C\d+)*)\)\s*$")
_OPEN = re.compile(r"^\s*[(（]\s*$")
_CLOSE = re.compile(r"^\s*[)）]")


def offline_knowledge(
    text: str, *, title: str = "", heading_path: Sequence[str] = (), mode: str = "index"
) -> ChunkKnowledge:
    """Extract a chunk's knowledge by rules: questions, plus entities and relations in graph mode.

    Line numbers in questions are 1-based over `text.splitlines()`, as the LLM role numbers them.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}.")
    segments = segment_text(text)
    if not segments:
        return ChunkKnowledge()
    chinese = is_chinese_segments(segments, " ".join([title, *heading_path]))
    ctx = context_for(title, heading_path, chinese=chinese)
    headings = [s.text for s in segments if s.kind == "heading"]
    found = [_mentions(s, ctx.heading_path, headings) for s in segments]
    tops = [top_level(ms) for ms in found]
    tally = _tally(segments, found, tops, heading_path)
    ranked = sorted((c for c in tally.values() if not c.weak), key=_rank)
    about = [c.name for c in ranked if c.type not in ("clause", "weakness")][:8]
    drafts = build_questions(segments, tops, ctx, about)
    lines = max(1, len(text.splitlines()))
    questions = [
        IndexQuestion(
            question=d.text,
            line_start=min(max(1, d.line_start), lines),
            line_end=min(max(d.line_start, d.line_end, 1), lines),
        )
        for d in drafts
    ]
    if mode == BuildMode.INDEX:
        return ChunkKnowledge(questions=questions)
    entities, relations = _graph(segments, tops, found, tally, ranked)
    return ChunkKnowledge(questions=questions, entities=entities, relations=relations)


@dataclass
class _Candidate:
    """Everything the chunk says about one entity key."""

    key: str
    first: tuple[int, int]  # (segment, offset) of the first mention: the tie-breaker
    names: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)
    count: int = 0
    weight: float = 0.0
    weak: bool = True
    in_heading: bool = False
    requirement: bool = False  # the clause id of a requirement row (kept whatever its score)
    description: str = ""
    described_by_heading: bool = False  # a later sentence makes a better description
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.names.most_common(1)[0][0]

    @property
    def type(self) -> str:
        return min(self.types, key=_TYPE_ORDER.index)

    @property
    def score(self) -> float:
        # Specificity times a damped frequency: "HTML" in two rows should not outrank
        # "参数化查询" in one, nor a word repeated in every row the identifiers.
        frequency = 1.0 + 0.5 * math.log2(min(self.count, 16))
        return self.weight * frequency + (1.0 if self.in_heading else 0.0)


def _rank(c: _Candidate) -> tuple[float, tuple[int, int]]:
    return (-c.score, c.first)


def _mentions(segment: Segment, path: Sequence[str], headings: Sequence[str]) -> list[Mention]:
    """A segment's mentions, with a requirement row's clause id and CWE column as entities."""
    found = find_mentions(segment.text, code=segment.kind == "code", code_terms=segment.code_terms)
    req = requirement_of(segment)
    if req is None:
        return found
    extra = {"level": req.level} if req.level else {}
    if req.cwe:
        extra["cwe"] = req.cwe
    clause = display_clause(req.clause, path, headings)
    rows = [
        Mention(clause, "clause", 0, len(segment.cells[0]), 2.5, attributes=tuple(extra.items()))
    ]
    if req.cwe and (at := segment.text.rfind(req.cwe)) > 0:
        cwe = (("cwe", req.cwe),)
        rows.append(
            Mention(f"CWE-{req.cwe}", "weakness", at, at + len(req.cwe), 2.0, attributes=cwe)
        )
    return sorted(rows + found, key=lambda m: (m.start, -m.end))


def _tally(
    segments: Sequence[Segment],
    found: Sequence[Sequence[Mention]],
    tops: Sequence[Sequence[Mention]],
    heading_path: Sequence[str],
) -> dict[str, _Candidate]:
    path_key = normalize_entity_name(" ".join(heading_path))
    tally: dict[str, _Candidate] = {}
    for index, (segment, mentions) in enumerate(zip(segments, found, strict=True)):
        for m in mentions:
            key = normalize_entity_name(m.name)
            if len(key) < 2 or key.isdigit():
                continue
            c = tally.setdefault(key, _Candidate(key, (index, m.start)))
            c.names[m.name] += 1
            c.types[m.type] += 1
            c.count += 1
            c.weight = max(c.weight, m.weight)
            c.weak = c.weak and m.weak
            c.requirement = c.requirement or (
                segment.kind == "row" and m.type == "clause" and m.start == 0
            )
            c.in_heading = c.in_heading or segment.kind == "heading" or key in path_key
            for k, v in m.attributes:
                c.attributes.setdefault(k, v)
            if (not c.description or c.described_by_heading) and segment.kind != "code":
                c.description = _description(segment)
                c.described_by_heading = segment.kind == "heading"
    for segment, mentions in zip(segments, tops, strict=True):
        _abbreviations(segment.text, mentions, tally)
    return tally


def _abbreviations(text: str, mentions: Sequence[Mention], tally: dict[str, _Candidate]) -> None:
    """ "跨站点脚本（XSS）", "Cross-Site Request Forgery (CSRF)": note each name on the other."""
    for long, short in zip(mentions, mentions[1:], strict=False):
        if not (short.name.isupper() and not long.name.isupper()):
            continue
        if _OPEN.match(text[long.end : short.start]) and _CLOSE.match(text[short.end :]):
            long_c = tally.get(normalize_entity_name(long.name))
            short_c = tally.get(normalize_entity_name(short.name))
            if long_c is not None and short_c is not None:
                long_c.attributes.setdefault("abbreviation", short.name)
                short_c.attributes.setdefault("full_name", long.name)


def _description(segment: Segment) -> str:
    """The first sentence mentioning an entity, as its description (a row: its requirement)."""
    req = requirement_of(segment)
    text = req.description if req is not None else segment.text
    text = _ASVS_REFERENCE.sub("", " ".join(text.split()))
    if segment.kind == "code":
        return ""
    return text if len(text) <= _DESCRIPTION_CHARS else text[: _DESCRIPTION_CHARS - 1] + "…"


def _graph(
    segments: Sequence[Segment],
    tops: Sequence[Sequence[Mention]],
    found: Sequence[Sequence[Mention]],
    tally: dict[str, _Candidate],
    ranked: Sequence[_Candidate],
) -> tuple[list[ExtractedEntity], list[ExtractedRelation]]:
    terms = [c for c in ranked if not c.requirement][:MAX_ENTITIES]
    chosen = {c.key: c for c in ranked if c.requirement or c in terms}
    room = len(chosen) + MAX_PATTERN_ENDPOINTS
    links: dict[tuple[str, str, str], str] = {}  # (source, type, target) -> sentence
    for segment, mentions in zip(segments, tops, strict=True):
        if segment.kind == "code":
            continue
        for link in pattern_links(segment.text, mentions):
            ends = _endpoints(link, tally, chosen, room)
            if ends is not None:
                links.setdefault((ends[0], link.type, ends[1]), _description(segment))
    for source, kind, _ in links:
        if kind == "prevents" and chosen[source].type == "concept":
            chosen[source].types["control"] += 1  # what prevents an attack is a control
    linked = {frozenset((s, t)) for s, _, t in links}
    order = {key: i for i, key in enumerate(chosen)}
    pairs: Counter[tuple[str, str]] = Counter()
    first_seen: dict[tuple[str, str], str] = {}
    for segment, mentions in zip(segments, found, strict=True):
        if segment.kind == "code":
            continue
        keys = sorted(
            {k for m in mentions if (k := normalize_entity_name(m.name)) in chosen},
            key=order.__getitem__,
        )
        for pair in co_occurring(keys):
            if frozenset(pair) not in linked:
                pairs[pair] += 1
                first_seen.setdefault(pair, _description(segment))
    related = sorted(pairs, key=lambda p: (-pairs[p], order[p[0]], order[p[1]]))[:MAX_RELATED]
    entities = [
        ExtractedEntity(
            name=c.name, type=c.type, description=c.description, attributes=c.attributes
        )
        for c in chosen.values()
    ]
    relations = [
        ExtractedRelation(source=chosen[s].name, target=chosen[t].name, type=k, description=d)
        for (s, k, t), d in links.items()
    ] + [
        ExtractedRelation(
            source=chosen[a].name,
            target=chosen[b].name,
            type="related_to",
            description=first_seen[(a, b)],
        )
        for a, b in related
    ]
    return entities, relations


def _endpoints(
    link: Link, tally: dict[str, _Candidate], chosen: dict[str, _Candidate], room: int
) -> tuple[str, str] | None:
    """The keys of a pattern's two ends, adding them to the chosen entities if there is room."""
    source, target = (
        normalize_entity_name(link.source.name),
        normalize_entity_name(link.target.name),
    )
    if source == target or source not in tally or target not in tally:
        return None
    missing = [k for k in (source, target) if k not in chosen]
    if len(chosen) + len(missing) > room:
        return None
    for key in missing:
        chosen[key] = tally[key]
    return source, target
