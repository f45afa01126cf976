"""Questions a chunk answers, made from its headings, requirement rows and normative sentences.

Every question names the document (its title or the standard it belongs to) instead of saying
"this document", so that it still makes sense when retrieved alone, and points at the lines
that answer it. Nothing is asked that the chunk does not answer: a normative sentence gives a
question about its own subject, a requirement row one about its own clause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import lexicon as lx
from .find_terms import Mention
from .segments import Segment, clean_inline, requirement_of

__all__ = ["Context", "Draft", "build_questions", "context_for", "display_clause"]

MAX_QUESTIONS = 12
MIN_QUESTIONS = 5

_ZH_MODAL = re.compile(
    r"(?P<never>禁止|不得|不应|严禁|不要|不允许)|(?P<must>必须|务必|需要|应当|应该"
    r"|(?<![响对相反供适效回顺呼感答报理])应(?![用答急变聘邀届激酬力运付]))"
)
_EN_MODAL = re.compile(
    r"\b(?:(?P<never>(?:must|shall|should)\s+(?:not|never)|mustn't|shouldn't|never|do\s+not|don't)"
    r"|(?P<must>must|shall|required|needs?\s+to|ha(?:ve|s)\s+to|mandatory)"
    r"|(?P<should>should|recommended))\b",
    re.IGNORECASE | re.ASCII,
)
_STANDARD = re.compile(
    r"\b(?:OWASP\s+)?(?:ASVS|MASVS|MASTG|SAMM|Top\s+10)\b|\bGB/T\s?\d{4,6}(?:[-—]\d{4})?"
    r"|\bISO(?:/IEC)?\s?\d{3,5}|\bNIST\s+SP\s?800-\d{1,3}[A-Z]?|\bPCI[\s-]DSS\b|\bRFC\s?\d{3,5}",
    re.ASCII,
)
_NUMBERING = re.compile(
    r"^(?:第[一二三四五六七八九十百零0-9]+[编篇章节条款部分]\s*|附录\s*[A-Z]?\s*[:：]?\s*"
    r"|V?\d{1,3}(?:\.\d{1,3})*\.?\s+|[A-Z]\.\s+"
    r"|(?:[A-Z][a-z]+\s+){0,2}(?:Option|Step|Part|Rule|Principle|Phase|Chapter)\s+\d+[:.]\s*)"
)
_EN_NAMED_WORK = re.compile(
    r"(?:cheat\s*sheet|guide|standard|specification|handbook|manual|framework|checklist|project)$",
    re.IGNORECASE,
)
_SELF_EN = re.compile(
    r"\b(?:this|the\s+present|the\s+current)\s+(?:document|cheat\s*sheet|guide|standard|section"
    r"|chapter|article|page|specification)\b",
    re.IGNORECASE,
)
_SELF_ZH = re.compile(r"本(?:文档|文|标准|章|节|指南|规范|部分)|该(?:文档|标准)")
_ZH_DEFINITION = re.compile(r"^(?:[（(][^）)]{0,20}[）)])?\s*(?:是指|指的是|是一种|是一类|是)")
_EN_DEFINITION = re.compile(
    r"^(?:\s*\([^)]{0,30}\))?\s+(?:(?:is|are)\s+(?:a|an|the|one)\b|refers?\s+to\b|means\b)", re.I
)
_ZH_PURPOSE = re.compile(r"^\s*(?:可以|可|主要)?用于")
_EN_PURPOSE = re.compile(r"^\s+(?:is|are|can\s+be)\s+used\s+(?:to|for)\b", re.I)
_ZH_PREVENT = re.compile(r"(?:防止|预防|避免|防范|抵御|防御)\s*$")
_EN_PREVENT = re.compile(
    r"\b(?:avoid|prevent|stop|mitigate|preventing|avoiding|(?:defend|protect)(?:ing)?\s+against)\s+$",
    re.I,
)
_ID_TYPES = frozenset({"weakness", "vulnerability", "standard", "clause"})
_ID_TITLE = re.compile(r"^\s*[:：]\s*\S")
_CLAUSE_HEAD = re.compile(r"^V(\d{1,2}(?:\.\d{1,3})*)\b")


@dataclass(frozen=True, slots=True)
class Context:
    """How questions about one chunk name its document, and in which language they are asked."""

    chinese: bool
    label: str  # "《V5 验证、过滤和编码》", "the SQL Injection Prevention Cheat Sheet", or ""
    standard: str  # a standard named in the title or heading path ("ASVS"), or ""
    title: str
    heading_path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Draft:
    priority: int  # lower comes first
    line_start: int
    line_end: int
    text: str


def context_for(title: str, heading_path: Sequence[str], *, chinese: bool) -> Context:
    """Decide how questions will name the document: by its title, else its top heading."""
    heading_path = [clean_inline(h) for h in heading_path]
    base = clean_inline(title or (heading_path[0] if heading_path else ""))
    if not base:
        label = ""
    elif chinese:
        label = base if base.startswith("《") else f"《{base}》"
    elif _EN_NAMED_WORK.search(base) and not base.lower().startswith("the "):
        label = f"the {base}"
    else:
        label = base
    found = _STANDARD.search(" ".join([title, *heading_path]))
    standard = " ".join(found.group().split()) if found else ""
    return Context(chinese, label, standard, base, tuple(heading_path))


def display_clause(clause: str, heading_path: Sequence[str], headings: Sequence[str]) -> str:
    """Write a row's clause id as its document does: "5.3.1" under "V5.3 …" is "V5.3.1"."""
    if clause.startswith("V"):
        return clause
    for heading in [*heading_path, *headings]:
        found = _CLAUSE_HEAD.match(heading)
        if found and clause.startswith(found.group(1) + "."):
            return f"V{clause}"
    return clause


def build_questions(
    segments: Sequence[Segment],
    tops: Sequence[Sequence[Mention]],
    ctx: Context,
    salient: Sequence[str],
) -> list[Draft]:
    """Draft up to twelve questions; `salient` is the chunk's best entity names, best first."""
    drafts = _heading_questions(segments, ctx)
    headings = [s.text for s in segments if s.kind == "heading"]
    used: set[str] = set()
    for segment, mentions in zip(segments, tops, strict=True):
        if segment.kind == "code":
            continue
        if (req := requirement_of(segment)) is not None:
            clause = display_clause(req.clause, ctx.heading_path, headings)
            subject = _subject(
                [m for m in mentions if m.start > len(segment.cells[0])], ctx, at=None
            )
            drafts.append(_draft(1, segment, _row_question(ctx, clause, subject)))
            continue
        if segment.kind == "heading":
            continue
        if (question := _normative_question(segment, mentions, ctx)) is not None:
            drafts.append(_draft(1, segment, question[0]))
            used.add(question[1])
        elif (question := _definition_question(segment, mentions, ctx)) is not None:
            drafts.append(_draft(2, segment, question[0]))
            used.add(question[1])
    drafts = _dedupe(drafts)
    if len(drafts) < MIN_QUESTIONS and ctx.label:
        # top up to five, after the questions already drafted (_dedupe keeps the order)
        more = _about_questions(segments, tops, ctx, salient, used)
        drafts = _dedupe(drafts + more)[:MIN_QUESTIONS]
    return sorted(drafts, key=lambda d: (d.priority, d.line_start))[:MAX_QUESTIONS]


def _draft(priority: int, segment: Segment, text: str) -> Draft:
    return Draft(priority, segment.line_start, segment.line_end, text)


def _dedupe(drafts: Sequence[Draft]) -> list[Draft]:
    seen: dict[str, Draft] = {}
    for draft in drafts:
        text = _context_free(draft.text)
        if not text:
            continue
        key = re.sub(r"\W+", "", text.casefold())
        if key and key not in seen:
            seen[key] = Draft(draft.priority, draft.line_start, draft.line_end, text)
    return list(seen.values())


def _context_free(text: str) -> str:
    """Drop "this document" for nothing: a question that cannot name its document is dropped."""
    return "" if _SELF_EN.search(text) or _SELF_ZH.search(text) else text


def _term(heading: str) -> str:
    term = _NUMBERING.sub("", heading).strip(" :：-—")
    return term or heading


def _heading_questions(segments: Sequence[Segment], ctx: Context) -> list[Draft]:
    headings = [s for s in segments if s.kind == "heading"]
    last = segments[-1].line_end if segments else 1
    drafts: list[Draft] = []
    starts_a_section = bool(segments) and segments[0].kind == "heading"
    if (
        ctx.heading_path
        and not starts_a_section
        and not any(h.text == ctx.heading_path[-1] for h in headings)
    ):  # the chunk goes on with a section whose heading is in an earlier chunk
        end = headings[0].line_start - 1 if headings and headings[0].line_start > 1 else last
        inside = [s for s in segments if s.line_start <= end]
        text = _heading_question(ctx.heading_path[-1], ctx, _normative(inside))
        if text:
            drafts.append(Draft(0 if len(ctx.heading_path) > 1 else 4, 1, max(1, end), text))
    for i, h in enumerate(headings):
        end = next((o.line_start - 1 for o in headings[i + 1 :] if o.level <= h.level), last)
        inside = [s for s in segments if h.line_start < s.line_start <= end]
        if not inside and any(o.line_start > h.line_start for o in headings):
            continue  # a heading followed straight by a deeper one says nothing itself
        text = _heading_question(h.text, ctx, _normative(inside))
        if text:
            top = h.text == ctx.title
            drafts.append(Draft(4 if top else (0 if i == 0 else 2), h.line_start, end, text))
    return drafts


def _normative(segments: Sequence[Segment]) -> bool:
    return any(
        requirement_of(s) is not None or (s.kind == "sentence" and _modal(s.text) is not None)
        for s in segments
    )


def _modal(text: str) -> re.Match[str] | None:
    """The first modal verb of a sentence, Chinese or English whatever the chunk's language."""
    return _ZH_MODAL.search(text) or _EN_MODAL.search(text)


def _heading_question(heading: str, ctx: Context, normative: bool) -> str:
    term, label = _term(heading), ctx.label
    generic = term.casefold() in lx.GENERIC_HEADINGS
    if heading == ctx.title:
        if not label:
            return ""
        return f"{label}包括哪些内容？" if ctx.chinese else f"What does {label} cover?"
    if ctx.chinese:
        if generic:
            return f"{label}的{term}是什么？" if label else ""
        if normative:
            return f"{label}中关于{term}有哪些要求？" if label else f"关于{term}有哪些要求？"
        if len(term) <= 10 and not re.search(r"[\s，、：:（(]", term):
            return f"什么是{term}？"
        return f"{label}中关于{term}有哪些内容？" if label else ""
    if heading.endswith("?"):
        return heading
    if generic:
        return f"What does {label} say in its '{heading}' section?" if label else ""
    if normative:
        return f"What does {label}'s section '{heading}' require?" if label else ""
    return f"What does {label} say about {term}?" if label else f"What is {term}?"


def _subject(mentions: Sequence[Mention], ctx: Context, at: int | None) -> Mention | None:
    """The term a sentence is about: the nearest before its modal verb, else the first after."""
    title = ctx.title.casefold()
    usable = [
        m
        for m in mentions
        if not m.weak and m.type not in ("clause", "weakness") and m.name.casefold() != title
    ]
    if at is not None:
        before = [m for m in usable if m.end <= at]
        if before:
            return before[-1]
        usable = [m for m in usable if m.start >= at]
    tiers = [
        # a requirement row is best asked about what it guards or guards against
        [m for m in usable if m.type in ("vulnerability", "control") and m.weight >= 1.5]
        if at is None
        else [],
        [m for m in usable if m.weight >= 1.5],  # compounds and identifiers
        [m for m in usable if m.weight >= 1.0],
        usable,
    ]
    return next((tier[0] for tier in tiers if tier), None)


def _row_question(ctx: Context, clause: str, subject: Mention | None) -> str:
    owner = ctx.standard or ctx.label
    if ctx.chinese:
        named = f"{owner} {clause}" if ctx.standard else f"{owner}{clause}".strip()
        return f"{named} 对{subject.name}有什么要求？" if subject else f"{named} 要求什么？"
    if ctx.standard:
        named = f"{ctx.standard} {clause}"
    else:
        named = f"requirement {clause} of {owner}" if owner else f"requirement {clause}"
    tail = f" for {subject.name}" if subject else ""
    return f"What does {named} require{tail}?"


def _normative_question(
    segment: Segment, mentions: Sequence[Mention], ctx: Context
) -> tuple[str, str] | None:
    found = _modal(segment.text)
    if found is None:
        return None
    subject = _subject(mentions, ctx, at=found.start())
    if subject is None:
        return None
    name, label = subject.name, ctx.label
    kind = next(k for k in ("never", "must", "should") if found.groupdict().get(k))
    prevent = _ZH_PREVENT if ctx.chinese else _EN_PREVENT
    if subject.type == "vulnerability" or prevent.search(segment.text[: subject.start]):
        # "To avoid SQL injection flaws, developers need to: …" is about stopping the attack.
        if ctx.chinese:
            return f"{label}中如何防止{name}？" if label else f"如何防止{name}？", name
        where = f" according to {label}" if label else ""
        return f"How can {name} be prevented{where}?", name
    if ctx.chinese:
        where = f"{label}中" if label else ""
        if kind == "never":
            return f"{where}关于{name}禁止哪些做法？", name
        return f"{label}对{name}有什么要求？", name
    where = f" according to {label}" if label else ""
    if kind == "never":
        return f"What should never be done with {name}{where}?", name
    if kind == "should":
        return (
            f"What does {label} recommend for {name}?"
            if label
            else f"What is recommended for {name}?"
        ), name
    return f"What is required for {name}{where}?", name


def _definition_question(
    segment: Segment, mentions: Sequence[Mention], ctx: Context
) -> tuple[str, str] | None:
    first = next((m for m in mentions if not m.weak), None)
    if first is None or segment.text[: first.start].strip().lower() not in ("", "the", "a", "an"):
        return None
    rest = segment.text[first.end :]
    if first.type in _ID_TYPES and _ID_TITLE.match(rest):  # "CWE-89: Improper Neutralization …"
        return (f"什么是{first.name}？" if ctx.chinese else f"What is {first.name}?"), first.name
    if ctx.chinese:
        if _ZH_DEFINITION.match(rest):
            return f"什么是{first.name}？", first.name
        if _ZH_PURPOSE.match(rest):
            return f"{first.name}用于什么？", first.name
        return None
    if _EN_DEFINITION.match(rest):
        return f"What is {first.name}?", first.name
    if _EN_PURPOSE.match(rest):
        return f"What is {first.name} used for?", first.name
    return None


def _about_questions(
    segments: Sequence[Segment],
    tops: Sequence[Sequence[Mention]],
    ctx: Context,
    salient: Sequence[str],
    used: set[str],
) -> list[Draft]:
    """Fill a short list with "what does the document say about X" for its salient terms."""
    drafts: list[Draft] = []
    for name in salient:
        if name in used or (name.isupper() and len(name) <= 4):
            continue  # "What does … say about NS?" helps no one
        where = next(
            (
                s
                for s, ms in zip(segments, tops, strict=True)
                if s.kind in ("sentence", "row") and any(m.name == name for m in ms)
            ),
            None,
        )
        if where is None:
            continue
        text = (
            f"{ctx.label}中关于{name}有哪些说明？"
            if ctx.chinese
            else f"What does {ctx.label} say about {name}?"
        )
        drafts.append(_draft(3, where, text))
        if len(drafts) >= MIN_QUESTIONS:
            break
    return drafts
