"""Relations between the terms of a sentence: lexical patterns, then co-occurrence.

A pattern is a trigger ("属于", "包括", "导致", "防止", "使用", "is a", "prevents", "is part of",
"uses") with a term right before it and one (or, for "includes" and "uses", a list) right after
it, in the same clause. The distance rules are strict on purpose: a wrong typed edge misleads
more than a missing one, and co-occurrence still links what the patterns miss (`related_to`).
A clause that forbids or denies ("禁止对不可信数据使用…", "must not use") states no relation.

The types (docs/architecture.md §4): is_a, part_of, includes, causes, prevents, requires, uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .mention import CJK_CHARS, Mention

__all__ = ["Link", "co_occurring", "pattern_links"]


@dataclass(frozen=True, slots=True)
class Link:
    source: Mention
    target: Mention
    type: str


# Named groups are relation types; `_by` groups are passive ("is prevented by") and turn round.
_ZH = re.compile(
    r"(?P<part_of>是(?P<part>[^，,。；;：:]{1,24}?)的(?:一部分|组成部分|子集)|隶属于)"
    r"|(?P<is_a>是(?P<kind>[^，,。；;：:]{1,24}?)的(?:一种|一类|一个子类)|属于|是一种|是一类|为一种)"
    r"|(?P<includes>包括|包含|涵盖|分为)"
    r"|(?P<causes>导致|引起|造成|引发|致使)"
    r"|(?P<prevents>防止|预防|防御|防范|抵御|阻止|避免|缓解|抵抗)"
    r"|(?P<requires>需要|要求|依赖于|依赖)"
    r"|(?P<uses>使用(?!者)|采用|利用|调用)"
)
_EN = re.compile(
    r"\b(?:"
    r"(?P<part_of>(?:is|are)\s+(?:an?\s+)?(?:part|parts|components?|subsets?)\s+of|belongs?\s+to)"
    r"|(?P<prevents_by>(?:is|are)\s+(?:\w+\s+)?(?:prevented|mitigated|stopped|blocked)\s+by)"
    r"|(?P<causes_by>(?:is|are)\s+(?:\w+\s+)?caused\s+by)"
    r"|(?P<is_a>(?:is|are)\s+(?:an?\s+|one\s+of\s+the\s+)?(?:\w+\s+)?"
    r"(?:types?|kinds?|forms?|class|classes|category|categories|variants?)\s+of|is\s+an?)"
    r"|(?P<includes>includes?|including|contains?|consists\s+of|comprises?)"
    r"|(?P<causes>causes?|leads?\s+to|results?\s+in)"
    r"|(?P<prevents>prevents?|mitigates?|protects?\s+against|defends?\s+against|stops?|blocks?"
    r"|(?:is|are)\s+(?:an?\s+)?(?:\w+\s+)?defen[cs]es?\s+against)"
    r"|(?P<requires>requires?|depends\s+on)"
    r"|(?P<uses_by>(?:is|are)\s+(?:\w+\s+)?used\s+by)"
    # "use" as a verb, not the noun of "the use of"
    r"|(?P<uses>(?<!\bthe\s)uses?(?!\s+of\b)|employs?|relies\s+on)"
    r")\b",
    re.IGNORECASE | re.ASCII,
)
_GROUPS = (
    "part_of",
    "prevents_by",
    "causes_by",
    "is_a",
    "includes",
    "causes",
    "prevents",
    "requires",
    "uses_by",
    "uses",
)
_CLAUSE_BREAK = re.compile(r"[,，;；。:：!?！？()（）|]")
_NEGATION = re.compile(
    r"\b(?:not|cannot|never|no longer|avoid\w*|forbid\w*|prohibit\w*)\b|n't"
    r"|不能|无法|未能|不会|并非|没有|禁止|严禁|不得|不允许|不要|切勿|不应|不可|避免使用|不$",
    re.IGNORECASE,
)
_LIST_GAP = re.compile(
    r"^\s*(?:[、,，/]|和|及|与|或|以及|或者|and|or|as well as|,\s*(?:and|or))?\s*$", re.I
)
_HAS_CJK = re.compile(f"[{CJK_CHARS}]")
_MODIFIES = re.compile(r"^(?:中的|中|的)")
# "更换会话标识，防止会话固定攻击", "X, to prevent Y": a purpose clause after a comma; what the
# clause before it acts on is what prevents.
_PURPOSE = re.compile(r"[，,]\s*(?:以便|从而|以|来|so as to|to)?\s*$", re.IGNORECASE)
_ZH_NEAR, _EN_NEAR = 10, 30  # how far (in characters) a term may stand from its trigger
_CATEGORY_TYPES = frozenset({"is_a", "part_of"})  # where a generic word may be the target
_LISTS = frozenset({"includes", "uses"})  # "使用 bcrypt、scrypt 或 Argon2id": each item


def pattern_links(text: str, mentions: Sequence[Mention]) -> list[Link]:
    """Find the typed relations one sentence states between its (top-level) mentions."""
    links: list[Link] = []
    if _HAS_CJK.search(text):
        links.extend(_links(text, mentions, _ZH, _ZH_NEAR))
    return links + _links(text, mentions, _EN, _EN_NEAR)


def _links(
    text: str, mentions: Sequence[Mention], pattern: re.Pattern[str], near: int
) -> list[Link]:
    links: list[Link] = []
    for found in pattern.finditer(text):
        group = next(g for g in _GROUPS if g in pattern.groupindex and found.group(g))
        start, end = found.span(group)
        inner = found.groupdict().get("kind") or found.groupdict().get("part")
        words = [(start, end)]
        if inner is not None:  # "是B的一种": the trigger words are around B
            inner_start, inner_end = found.span("kind" if found.group("kind") else "part")
            words = [(start, inner_start), (inner_end, end)]
        if any(m.start < b and a < m.end for m in mentions for a, b in words):
            continue  # the trigger is part of a term: "文件包含", "防御措施"
        kind, passive = group.removesuffix("_by"), group.endswith("_by")
        # "is a" is everywhere; only "X is a Y" with X right before it counts.
        before = 2 if group == "is_a" and found.group(group).lower().startswith("is a") else near
        at = start
        if kind == "prevents" and not passive and (purpose := _PURPOSE.search(text, 0, start)):
            at = purpose.start()
        source = _before(text, mentions, at, before)
        if _denied(text, at):
            continue
        if inner is not None:  # "A是B的一种": B is inside the trigger
            inside = [m for m in mentions if m.start >= found.start(group) and m.end <= end]
            targets = inside[-1:]
        else:
            targets = _after(text, mentions, end, near, list_ok=kind in _LISTS)
        targets = [t for t in targets if not t.weak or kind in _CATEGORY_TYPES]
        if source is None or source.weak:
            continue
        for target in targets:
            a, b = (target, source) if passive else (source, target)
            links.append(Link(a, b, kind))
    return links


def co_occurring(keys: Sequence[str], limit: int = 6) -> list[tuple[str, str]]:
    """The pairs among a sentence's most salient entity keys (`keys` is ordered best first).

    A pair where one name holds the other ("sql" and "sql注入") is left out: the longer name
    already says they belong together.
    """
    top = list(dict.fromkeys(keys))[:limit]
    return [(a, b) for i, a in enumerate(top) for b in top[i + 1 :] if a not in b and b not in a]


def _before(text: str, mentions: Sequence[Mention], at: int, near: int) -> Mention | None:
    best = None
    for m in mentions:
        if m.end <= at:
            best = m
    if best is None:
        return None
    gap = text[best.end : at]
    # "跨站脚本攻击（XSS）是一种…": a closing bracket after the subject does not end its clause
    if len(gap) > near or _CLAUSE_BREAK.search(gap.lstrip(")）")) or _NEGATION.search(gap):
        return None
    return best


def _denied(text: str, at: int) -> bool:
    """Whether the clause up to a trigger forbids or denies it: "禁止对不可信数据使用…" says
    nothing uses anything, though the subject stands right before the trigger."""
    clause = _CLAUSE_BREAK.split(text[:at])[-1]
    return bool(_NEGATION.search(clause))


def _after(
    text: str, mentions: Sequence[Mention], at: int, near: int, *, list_ok: bool
) -> list[Mention]:
    following = [m for m in mentions if m.start >= at]
    if not following:
        return []
    first = following[0]
    gap = text[at : first.start]
    if len(gap) > near or _CLAUSE_BREAK.search(gap):
        return []
    if near == _ZH_NEAR:  # "Web 应用程序中…的重大漏洞": a term before 中/的 only modifies the head
        for m in following[1:3]:
            between = text[first.end : m.start]
            if not _MODIFIES.match(between) or len(between) > 12 or _CLAUSE_BREAK.search(between):
                break
            first = m
    out = [first]
    if list_ok:
        for m in following[1:]:
            if not _LIST_GAP.match(text[out[-1].end : m.start]):
                break
            out.append(m)
    return out
