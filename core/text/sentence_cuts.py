"""Where a paragraph is cut into sentences, and how a cut keeps its text whole
(core/text/sentences.py reads the paragraphs).

A block's lines are joined into one text (CJK meets CJK without a space), with the offsets that
lead back to the original; the text is cut at 。！？； and at . ! ? before a space, never inside a
code span, a Markdown link or a short bracketed aside, nor after an abbreviation ("e.g."); and a
piece, or a sentence clipped for display, drops the markup it left unpaired (a clipped one
closes the brackets it cut through).
"""

from __future__ import annotations

import re

__all__ = ["balanced", "clip", "join_lines", "sentence_spans", "source_offset"]

_CJK_JOIN = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
# A sentence end: CJK punctuation, or Latin punctuation before a space, with closing quotes.
_END = re.compile(r"[。！？；]+[”’」』）)\]\"']*|[.!?]+[”’\"')\]]*(?=\s)")
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|cf|fig|no|approx|incl|Mr|Mrs|Dr|St)|\b[A-Z])$", re.I
)
# Where a sentence end does not count: code spans, links, short bracketed asides.
_PROTECTED = re.compile(
    r"`[^`\n]*`|!?\[[^\]\n]*\]\([^)\n]*\)|（[^（）\n]{0,120}）|\([^()\n]{0,120}\)|「[^「」\n]{0,120}」"
)
_SOFT_CUT = re.compile(r"[，、,;；:：\s]")


def clip(text: str, limit: int) -> str:
    """Shorten a sentence to at most `limit` characters at a soft break, markup kept balanced."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    soft = max((m.start() for m in _SOFT_CUT.finditer(cut)), default=-1)
    if soft > limit // 2:
        cut = cut[:soft]
    cut = balanced(cut.rstrip(" ，、,;；:：")) + "…"
    # A table row's headers stand in brackets at its end (core/text/table_rows.py): a cut
    # inside them closes what it opened, so no bracket is left open.
    for opening, closing in ("（）", "()"):
        cut += closing * max(0, cut.count(opening) - cut.count(closing))
    return cut


def join_lines(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """Join a block's lines; CJK meets CJK without a space. Returns the text and, per line,
    (offset in the joined text, offset in the original)."""
    parts: list[str] = []
    starts: list[tuple[int, int]] = []
    length = 0
    for begin, end in spans:
        piece = text[begin:end].rstrip("\\").rstrip()
        if not piece:
            continue
        if parts:
            glue = "" if _CJK_JOIN.match(parts[-1][-1:]) and _CJK_JOIN.match(piece[:1]) else " "
            parts.append(glue)
            length += len(glue)
        starts.append((length, begin))
        parts.append(piece)
        length += len(piece)
    return "".join(parts), starts


def source_offset(starts: list[tuple[int, int]], joined: int) -> int:
    """The original offset of a character of the joined text."""
    here, origin = starts[0]
    for at, begin in starts:
        if at > joined:
            break
        here, origin = at, begin
    return origin + max(0, joined - here)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Cut a joined paragraph at its sentence ends: (start, end) offsets."""
    protected = [m.span() for m in _PROTECTED.finditer(text)]
    spans, begin = [], 0
    for found in _END.finditer(text):
        end = found.end()
        if any(a < found.start() < b for a, b in protected):
            continue
        if found.group()[0] == "." and _ABBREVIATION.search(text[begin : found.start()]):
            continue
        if text[begin:end].strip():
            spans.append((begin, end))
            begin = end
    if text[begin:].strip():
        spans.append((begin, len(text)))
    return spans


def balanced(text: str) -> str:
    """Drop what markup a cut left unpaired: the last lone backtick, `**` or `~~`."""
    for mark in ("`", "**", "~~"):
        count = text.count(mark) if mark != "`" else len(re.findall(r"(?<!`)`(?!`)", text))
        if count % 2:
            at = text.rfind(mark) if mark != "`" else _last_single_backtick(text)
            text = (text[:at] + text[at + len(mark) :]).strip()
    return text


def _last_single_backtick(text: str) -> int:
    found = list(re.finditer(r"(?<!`)`(?!`)", text))
    return found[-1].start()
