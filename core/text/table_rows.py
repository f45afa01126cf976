"""A table's data row as a line a person reads: its statement with the columns' headers (issue 37).

A requirement table (`| # | 说明 | L1 | L2 | L3 | CWE |`) quoted row by row read as
"**3.3.2** | 如果认证器允许…… | L1: 30天 | … | 7.2": a reader had to count the bars to know what
"30天" is, and a column whose header was a link ("[NIST §](…)") lost its name. A row reads now
as its identifier, its statement, and the other cells named by their headers in brackets:

    3.3.2 如果认证器允许用户保持登录状态，请验证……重新认证。（L1: 30天 · L2: 12小时 · CWE: 613）
    3.2.1 Verify the application generates a new session token on user authentication. (L1: ✓ · CWE: 384)

- The statement is the row's longest cell when it is long enough to say something
  (`_STATEMENT_UNITS`); a row of short values has none, and reads as its cells, each with its
  header ("级别: L2 | 超时: 12 小时").
- An identifier before the statement ("3.3.2", "V3.2", "A01") leads, bare: a number under a "#"
  or "编号" header needs no name.
- A header is read as its text: a link becomes its words, emphasis and character references
  ("&sect;") go. A header that is no short name (empty, "#", a sentence) names nothing: its
  cell stands bare, and a tick under it ("✓") says nothing and goes.

Where the header comes from is the table itself: the chunker repeats a table's header row in
every chunk its rows continue into (core/ingest/chunk.py), so a row in a later chunk is read
with the same names.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from ..ingest.chunk import count_units
from .chinese import CJK

__all__ = ["row_cells", "row_line"]

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"\*\*|__|`")
# A short name: starts with a letter, digit, CJK character or § (the Chinese ASVS PDF heads
# its NIST column "§"); §, #, & and + occur in names
# ("NIST §", "C#", "R&D"). Sixteen characters hold "Level 1", "CWE", "安全要求", "NIST §".
_NAME = re.compile(r"[\w\u3400-\u9fff§][\w\u3400-\u9fff .()/（）§#&+-]{0,15}")
_MARK = re.compile(r"^[\s✓✔✗✘×xX\-–—/]*$")
# An identifier: a requirement or clause number, a short code ("3.3.2", "V3.2", "A01:2021").
_IDENTIFIER = re.compile(r"^[A-Za-z]{0,4}\d+(?:[.\-:]\d+)*[A-Za-z]?$")
# A cell this long (a unit is a CJK character or half a word, as the chunker counts) states
# something: ASVS's shortest requirement, "验证会话令牌具有至少 64 位的熵。", is 15; the
# longest value cells of its tables ("12小时 或 30分钟不活动，可选2FA") are longer still, so
# the statement is also the longest cell of its row.
_STATEMENT_UNITS = 12


def row_cells(row: str) -> list[str]:
    """Split a Markdown table row into its cells' text (an escaped `\\|` stays in its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def row_line(cells: Sequence[str], head: Sequence[str]) -> str:
    """Write a data row as one line: identifier, statement, then the other cells with their
    headers; a row without a statement is its cells, named, between bars."""
    names = [_name(h) for h in head]
    statement = _statement(cells)
    if statement < 0:
        return " | ".join(_named(cells, names, range(len(cells))))
    leads = [n for n in range(statement) if _IDENTIFIER.match(_unwrapped(cells[n]))]
    rest = [n for n in range(len(cells)) if n != statement and n not in leads]
    lead = [_unwrapped(cells[n]) for n in leads]
    details = _named(cells, names, rest)
    text = " ".join([*lead, cells[statement]])
    if not details:
        return text
    if CJK.search(text):
        return f"{text}（{' · '.join(details)}）"
    return f"{text} ({' · '.join(details)})"


def _statement(cells: Sequence[str]) -> int:
    """The index of the cell that says what the row is about, or -1 when none is long enough."""
    if not cells:
        return -1
    longest = max(range(len(cells)), key=lambda n: count_units(cells[n]))
    return longest if count_units(cells[longest]) >= _STATEMENT_UNITS else -1


def _named(cells: Sequence[str], names: Sequence[str], columns: Sequence[int]) -> list[str]:
    out: list[str] = []
    for n in columns:
        cell = cells[n]
        name = names[n] if n < len(names) else ""
        if cell and name:
            out.append(f"{name}: {cell}")
        elif cell and not _MARK.match(cell):
            out.append(cell)
    return out


def _name(header: str) -> str:
    """A header cell as a column's name, or "" when it is none."""
    text = _LINK.sub(r"\1", header)
    text = html.unescape(_EMPHASIS.sub("", text)).strip().rstrip(":：").strip()
    return text if _NAME.fullmatch(text) else ""


def _unwrapped(cell: str) -> str:
    """A cell without the emphasis around all of it ("**3.3.2**" is the number 3.3.2)."""
    for mark in ("**", "__", "`", "*", "_"):
        if len(cell) > 2 * len(mark) and cell.startswith(mark) and cell.endswith(mark):
            return cell[len(mark) : -len(mark)].strip()
    return cell
