"""A notebook as Markdown and back (docs/architecture.md §8): what `export` writes and `import`
reads.

The file is ordinary Markdown that reads well anywhere: one `## question` heading per cell, the
answer under it, then the cited sources. An HTML comment after each heading (invisible in any
Markdown viewer) carries what the text cannot: the cell's mode, strategies, top-k and the
citations' chunk ids, so that importing the file gives back the same cells with the same
answers. The hits are not written (a re-run finds them again). A file written by hand, with
`## ` headings and no comments, imports too: each heading becomes a cell in the default mode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .choices import CellMode
from .errors import ZhixingError
from .models import Notebook

__all__ = ["MAX_IMPORT_BYTES", "MAX_IMPORT_CELLS", "CellDraft", "parse_notebook", "to_markdown"]

MAX_IMPORT_BYTES = 2_000_000
MAX_IMPORT_CELLS = 500
_FORMAT = "zhixing-notebook 1"
_CELL = re.compile(r"^<!--\s*zhixing-cell\s+(\{.*\})\s*-->\s*$")
_SOURCES = "<!-- zhixing-sources -->"
_HEADING = re.compile(r"^##\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class CellDraft:
    """A cell read from a file: its question and settings, and the answer it was exported with."""

    question: str
    mode: CellMode = CellMode.ANSWER
    strategies: tuple[str, ...] = ()
    top_k: int = 10
    answer: dict[str, Any] | None = field(default=None)


def to_markdown(notebook: Notebook, *, title: str) -> str:
    """The notebook as Markdown: a title, then each cell's question, answer and sources."""
    scope = ", ".join(f"@{name}" for name in notebook.kbs) or "@all"
    lines = [f"# {title} — {scope}", f"<!-- {_FORMAT} -->", ""]
    for cell in notebook.cells:
        answer = cell.result.answer if cell.result is not None else None
        meta: dict[str, Any] = {"mode": str(cell.mode), "top_k": cell.top_k}
        if cell.strategies:
            meta["strategies"] = list(cell.strategies)
        if answer is not None:
            meta["found"] = bool(answer.get("found"))
            meta["citations"] = [_slim(c) for c in answer.get("citations", [])]
        lines += [f"## {_one_line(cell.question)}", _cell_comment(meta), ""]
        if answer is not None:
            lines += [_unheaded(str(answer.get("answer", ""))), ""]
            if answer.get("citations"):
                lines += [_SOURCES, *(_source_line(c) for c in answer["citations"]), ""]
        elif cell.result is not None:
            lines += [f"*{len(cell.result.hits)} hits*", ""]
    return "\n".join(lines).rstrip() + "\n"


def parse_notebook(text: str) -> list[CellDraft]:
    """The cells of a notebook file, in order; ZhixingError when it holds none or too many."""
    if len(text.encode("utf-8", "replace")) > MAX_IMPORT_BYTES:
        raise ZhixingError(
            f"This notebook file is over {MAX_IMPORT_BYTES // 1_000_000} MB; split it into smaller files."
        )
    drafts: list[CellDraft] = []
    question: str | None = None
    body: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading:
            if question is not None:
                drafts.append(_draft(question, body))
            question, body = heading.group(1), []
        elif question is not None:
            body.append(line)
    if question is not None:
        drafts.append(_draft(question, body))
    if not drafts:
        raise ZhixingError(
            "This file has no cells: a notebook file has one '## question' heading per cell."
        )
    if len(drafts) > MAX_IMPORT_CELLS:
        raise ZhixingError(
            f"This file has {len(drafts)} cells; a notebook imports at most {MAX_IMPORT_CELLS}."
        )
    return drafts


def _draft(question: str, body: Sequence[str]) -> CellDraft:
    lines = list(body)
    while lines and not lines[0].strip():
        lines.pop(0)
    meta: dict[str, Any] = {}
    if lines and (match := _CELL.match(lines[0].strip())):
        lines.pop(0)
        try:
            loaded = json.loads(match.group(1))
        except json.JSONDecodeError:
            loaded = None
        meta = loaded if isinstance(loaded, dict) else {}
    mode = _mode(meta.get("mode"))
    strategies = meta.get("strategies") or ()
    if not (isinstance(strategies, list | tuple) and all(isinstance(s, str) for s in strategies)):
        strategies = ()
    top_k = meta.get("top_k")
    top_k = top_k if isinstance(top_k, int) and 1 <= top_k <= 50 else 10
    answer = None
    if "found" in meta:
        text = "\n".join(lines)
        text = text.split(_SOURCES, 1)[0].strip()
        citations = meta.get("citations")
        answer = {
            "answer": text,
            "found": bool(meta["found"]),
            "citations": [c for c in citations if _is_citation(c)]
            if isinstance(citations, list)
            else [],
        }
    return CellDraft(_one_line(question), mode, tuple(strategies), top_k, answer)


def _mode(value: object) -> CellMode:
    try:
        return CellMode.parse(str(value))
    except ZhixingError:
        return CellMode.ANSWER


def _is_citation(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    kinds = {"n": int, "chunk_id": int, "document": str, "page": int, "text": str}
    return all(isinstance(value.get(k), t) for k, t in kinds.items())


def _slim(citation: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("n", "chunk_id", "document", "page", "text")
    return {k: citation[k] for k in keys if k in citation}


def _cell_comment(meta: Mapping[str, Any]) -> str:
    # "--" would end the comment early; JSON escapes keep the payload readable back.
    payload = json.dumps(meta, ensure_ascii=False).replace("--", "-\\u002d")
    return f"<!-- zhixing-cell {payload} -->"


def _source_line(citation: Mapping[str, Any]) -> str:
    page = int(citation.get("page") or 0)
    where = f" p.{page}" if page > 0 else ""
    text = _one_line(str(citation.get("text", "")))
    return f"- [{citation['n']}] {citation.get('document', '')}{where} — {text}"


def _unheaded(text: str) -> str:
    """An answer's own `## ` lines would read back as new cells: indent them out of the way."""
    return "\n".join(" " + line if _HEADING.match(line) else line for line in text.splitlines())


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
