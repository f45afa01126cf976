"""Tell navigation from content: a chunk that is a table of contents, an index, or nothing but
running headers and page numbers (issue 37).

A navigation chunk names every topic of a document and says nothing about any: over the ASVS
PDF, "What does ASVS require for session tokens?" found the table of contents first and the
offline answer began "V3 Session Management……32". Search ranks such a chunk after content and
the extractive answer never quotes it (core/search/engine.py, core/answer_sentences.py).

A chunk is navigation when most of its lines are navigation lines, read line by line after
NFKC (full-width digits and "．" become ASCII, "…" becomes "..."):

- a contents line: a title, then dot leaders ("....", "……", "。。。。", "····") and a page
  number, or long leaders whose page number the parser lost ("Frontispiece..........");
  or a numbered title ("V3 Session Management 32", "第三章 会话管理 32",
  "Chapter 3 Sessions 45") ending in a page number, counted only while those page numbers
  run in order, as a table of contents does and a table's numbers seldom do;
- in a chunk that is already a table of contents (it has a contents title, leaders or numbered
  contents lines): a plain title and its page number ("About the Standard 7", "会话管理 32"),
  counted with the numbered ones, and, right under the contents title, titles alone (chapter
  names without page numbers), until the first line that says something;
- an index line: a short term, then page numbers after commas ("session tokens, 12, 34-36");
- a page line: a page number alone or as a footer ("12", "- 12 -", "Page 3 of 40", "第 3 页");
- a title of such a page ("Table of Contents", "Contents", "Index", "目录", "索引").

Markdown table rows ("| … |") and fenced code are content, never navigation lines.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["NAVIGATION_SHARE", "is_navigation", "navigation_lines"]

# The share of a chunk's lines that must be navigation lines, and the fewest of them. Measured
# on the ASVS 4.0.3 PDFs (English and Chinese, 125 and 123 chunks as built): their contents
# chunks are 0.96 to 1.0 navigation lines and every other chunk 0, as are all chunks of the
# shipped samples and of the ASVS Markdown chapters. A half-way threshold leaves a wide margin
# on both sides, and a chunk where the contents end and the text begins counts as what most
# of it is. Three lines at least: one "see page 12" line does not make a short chunk an index.
NAVIGATION_SHARE = 0.5
MIN_NAVIGATION_LINES = 3
# Page numbers of numbered contents lines that go back: a table of contents runs in page order;
# allow one step back in four for a misread number or a second column.
_BACKSTEPS = 0.25

_PAGE = r"(?:\d{1,4}|[ivxlc]{1,6})"
_LEADERS = re.compile(rf"\S.*?(?:[.·。‧⋯_\-]\s?){{3,}}\s*{_PAGE}$", re.I)
_NUMBERED = re.compile(
    r"^(?:(?:chapter|section|part|appendix|annex)\s+[\dA-Z]+[.:]?"
    r"|第[一二三四五六七八九十百零〇\d]+[编篇章节部分条]+"
    r"|附\s*录\s*[A-Z一二三四五六七八九十]?"
    r"|V?\d{1,3}(?:\.\d{1,3}){0,4}\.?)"
    rf"\s*[^\s.。!?！？;；:：]\D*?\s+({_PAGE})$",
    re.I,
)
_INDEX = re.compile(
    r"^[^\d,，、|#][^,，、|]{0,48}?"
    r"(?:[,，、]\s*\d{1,4}(?:\s*[-–]\s*\d{1,4})?f?)+$",
    re.I,
)
_PAGE_LINE = re.compile(
    rf"^(?:(?:page|p\.)\s*)?[-–—]?\s*{_PAGE}\s*[-–—]?(?:\s*(?:/|of)\s*\d{{1,4}})?$"
    r"|^第\s*\d{1,4}\s*页(?:\s*[，,/]?\s*共\s*\d{1,4}\s*页)?$",
    re.I,
)
_TITLE = re.compile(
    r"^#*\s*(?:table\s+of\s+contents|contents|index|目\s*录|索\s*引)\s*$",
    re.I,
)
_SENTENCE_END = re.compile(r"[.。!?！？]$")
# Leaders that run to the line's end: a page number the parser lost. Ten dots at least, so a
# sentence that trails off ("……" is six after NFKC) is never one.
_BARE_LEADERS = re.compile(r"\S.*?(?:[.·。‧⋯_]\s?){10,}$")
# A plain title and its page number: a capital or CJK start, no sentence punctuation, at most
# 60 characters (ASVS's longest contents title is 58), then the page.
_PLAIN = re.compile(rf"^[A-Z\u3400-\u9fff][^.。!?！？;；:：,，|]{{0,59}}?\s+({_PAGE})$")
# A title alone: a capital, digit or CJK start, short, without sentence punctuation. (A
# Markdown list of links to the document's own sections is not counted: the cheat sheets put
# one under their introduction, and a chunk of both is content. Its items are no sentences,
# core/text/sentences.py, so they never become answer lines either.)
_TITLE_ALONE = re.compile(
    r"^(?:[-*+]\s+|\d{1,3}[.)]\s+)?[A-Z0-9\u3400-\u9fff][^。!?！？;；:：,，|]{0,39}$"
)


def navigation_lines(text: str) -> tuple[int, int]:
    """How many of `text`'s non-blank lines are navigation lines, and how many there are.

    Markdown headings other than a contents or index title count as neither: a chunk keeps its
    section's heading above whatever it holds.
    """
    total = navigation = 0
    pages: list[int] = []  # the page numbers of numbered and plain contents lines, in order
    numbered = plain = alone = 0
    anchored = False  # a contents title, leaders or a numbered contents line: a contents chunk
    under_title = False  # right under a contents title, before any line that says something
    fenced = False
    for raw in text.splitlines():
        line = unicodedata.normalize("NFKC", raw).strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if not line or (line.startswith("#") and not _TITLE.match(line)):
            continue
        total += 1
        if fenced or line.startswith("|"):
            under_title = False
            continue
        if _TITLE.match(line):
            navigation += 1
            anchored = under_title = True
        elif _PAGE_LINE.match(line) or _LEADERS.match(line) or _BARE_LEADERS.match(line):
            navigation += 1
            anchored = anchored or not _PAGE_LINE.match(line)
        elif (found := _NUMBERED.match(line)) and not _SENTENCE_END.search(line[:-1].rstrip()):
            numbered += 1
            anchored = True
            if found.group(1).isdigit():
                pages.append(int(found.group(1)))
        elif found := _PLAIN.match(line):
            plain += 1
            if found.group(1).isdigit():
                pages.append(int(found.group(1)))
        elif _INDEX.match(line):
            navigation += 1
        elif under_title and _TITLE_ALONE.match(line) and not _SENTENCE_END.search(line):
            alone += 1
        else:
            under_title = False
    backsteps = sum(1 for a, b in zip(pages, pages[1:], strict=False) if b < a)
    in_order = backsteps <= _BACKSTEPS * max(1, len(pages) - 1)
    if numbered and in_order:
        navigation += numbered
    if plain and in_order and anchored:
        navigation += plain
    if anchored:
        navigation += alone
    return navigation, total


def is_navigation(text: str) -> bool:
    """Whether a chunk's text is navigation (a table of contents, an index, page furniture)
    rather than content: at least NAVIGATION_SHARE of its lines, and MIN_NAVIGATION_LINES."""
    navigation, total = navigation_lines(text)
    return navigation >= MIN_NAVIGATION_LINES and navigation >= NAVIGATION_SHARE * total
