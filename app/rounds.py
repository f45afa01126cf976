"""What the recall and agent pages show alike: hits, answers, citations and agentic rounds.

`RoundsView` turns the agentic loop's trace events (docs/architecture.md §6) into one `st.status` block per
round, expanded while the round runs and collapsed once it is judged; the same view replays a
stored run's trace with every round collapsed. The content mirrors `zhixing ask`'s trace lines.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from ..core.models import Hit
from ..core.trace import AskEvent, EvaluateEvent, RetrieveEvent, stored_search
from .strings import recall as T
from .widgets import inert


def provenance(strategies: Mapping[str, int]) -> str:
    """Which strategies found a hit and at which rank, best first: "basic #1 · keyword #3"."""
    ranked = sorted(strategies.items(), key=lambda item: (item[1], item[0]))
    return " · ".join(f"{name} #{rank}" for name, rank in ranked)


def where(page: int, line_start: int = 0, line_end: int = 0, *, ocr: bool = False) -> str:
    """The page of a hit, and its lines when known (text documents are one long page); marked
    when its text was read by OCR from a scan."""
    parts = [T.PAGE.format(page=page)] if page > 0 else []
    if line_end > line_start > 0:
        parts.append(T.LINES.format(start=line_start, end=line_end))
    if ocr:
        parts.append(T.OCR)
    return " · ".join(parts) or "—"


def render_hits(hits: Sequence[Hit], header: str) -> None:
    """One expander per hit: rank, fused score, document, page and provenance; the text inside."""
    st.markdown(f"**{header.format(count=len(hits))}**")
    if not hits:
        st.caption(T.NO_HITS)
    for rank, hit in enumerate(hits, start=1):
        label = T.HIT_LABEL.format(
            rank=rank,
            document=hit.document,
            where=where(hit.page, hit.line_start, hit.line_end, ocr=hit.ocr),
            score=hit.score,
            provenance=provenance(hit.strategies),
        )
        with st.expander(inert(label)):
            heading = " › ".join(hit.heading_path) or "—"
            st.caption(inert(T.HIT_META.format(kb=hit.kb, heading=heading)))
            st.text(hit.text)


def render_answer(answer: Mapping[str, Any], *, hits: Sequence[Hit] = ()) -> None:
    """The answer (`Answer.to_json()`); the not-found sentence is shown exactly, as a notice."""
    text = inert(answer.get("answer", ""))
    if not answer.get("found"):
        st.info(text)
    else:
        st.markdown(text)
    note = answer.get("note")
    if note:  # a model's reply was set aside for the hits' own sentences: say so
        st.caption(T.ANSWER_NOTES.get(note, note))
    render_citations(answer.get("citations", []), hits)


def render_citations(citations: Sequence[Mapping[str, Any]], hits: Sequence[Hit] = ()) -> None:
    """Each `[n]` as an expander that opens the whole cited chunk, the cited sentences marked;
    without the chunk (an imported answer) the cited sentences alone."""
    if not citations:
        return
    chunks = {hit.chunk_id: hit.text for hit in hits}
    st.caption(T.CITATIONS_HEADER)
    for citation in citations:
        label = T.CITATION_LABEL.format(
            n=citation["n"],
            document=citation["document"],
            where=where(int(citation["page"]), ocr=bool(citation.get("ocr"))),
        )
        spans = [tuple(span) for span in citation.get("highlights") or ()]
        chunk = citation.get("chunk_text") or chunks.get(citation.get("chunk_id", -1))
        with st.expander(inert(label)):
            if chunk and spans and citation.get("chunk_text"):
                st.markdown(marked(chunk, spans))
            elif chunk:
                st.markdown(highlighted(chunk, str(citation["text"])))
            else:
                st.text(citation["text"])


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^])")


def _escaped(text: str) -> str:
    """Document text shown literally in Markdown: every mark escaped, line breaks kept, and
    no autolink (GFM finds `https://…` in the text after its escapes are read: `inert`)."""
    return "  \n".join(inert(_MARKDOWN_SPECIAL.sub(r"\\\1", line)) for line in text.split("\n"))


def highlighted(chunk: str, cited: str) -> str:
    """The chunk as literal Markdown with each cited sentence marked where it stands.

    The answer may have joined a sentence's lines or cut a long one ("…"), so a sentence is
    found by its characters in order, whatever whitespace stands between them.
    """
    spans: list[tuple[int, int]] = []
    for sentence in re.split(r"(?<=[。！？；.!?;])\s*|\s*…\s*", cited):
        chars = "".join(sentence.split())
        if not chars:
            continue
        pattern = r"\s*".join(re.escape(c) for c in chars)
        match = re.search(pattern, chunk)
        if match and match.end() > match.start():
            spans.append(match.span())
    return marked(chunk, spans)


def marked(chunk: str, spans: Sequence[tuple[int, ...]]) -> str:
    """The chunk as literal Markdown with the (start, end) spans marked."""
    out, at = [], 0
    for start, end, *_ in sorted(spans):
        if start < at:
            continue  # overlapping spans: the first one marks it
        out.append(_escaped(chunk[at:start]))
        marked = [_escaped(line) for line in chunk[start:end].split("\n")]
        out.append("  \n".join(f":orange-background[{m}]" if m.strip() else m for m in marked))
        at = end
    out.append(_escaped(chunk[at:]))
    return "".join(out)


def _listed(items: Sequence[str]) -> str:
    return inert("、".join(items)) if items else T.NONE


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items()) or T.NONE


class RoundsView:
    """A sink for `service.search.ask(on_event=...)`: renders each round as it happens.

    `live=False` replays a stored trace: every round starts collapsed. The loop may report from
    another thread; the view lends it the script's context first, as `build_sample` does.
    """

    def __init__(self, *, live: bool = True, parent: DeltaGenerator | None = None) -> None:
        self._ctx = get_script_run_ctx()
        self._live = live
        self._parent = parent if parent is not None else st.container()
        self._status: Any = None  # the open round's st.status block
        self._round = 0
        self._answer: Any = None  # the answer as the model writes it (an st.empty)

    def __call__(self, event: AskEvent) -> None:
        """The page's dispatcher of the agentic search's events (core/trace.py)."""
        if get_script_run_ctx() is None and self._ctx is not None:
            add_script_run_ctx(threading.current_thread(), self._ctx)
        n = int(event.get("round") or self._round or 1)
        if event["node"] == "plan":
            if event.get("resolved"):  # a follow-up, read with the earlier turns
                self._parent.caption(inert(T.RESOLVED.format(question=event["resolved"])))
            self._open(n).markdown(T.ROUND_ASPECTS.format(aspects=_listed(event["aspects"])))
        elif event["node"] == "refine":
            if not event.get("queries"):
                self._parent.caption(T.NO_NEW_QUERIES)
                return
            missing = _listed(event.get("missing", []))
            self._open(n).markdown(T.ROUND_GAPS.format(missing=missing))
        elif event["node"] == "retrieve":
            self._retrieved(self._current(n), event)
        elif event["node"] == "evaluate":
            self._evaluated(self._current(n), event, n)
        elif event["node"] == "merge":
            self.close()
            by_aspect = ", ".join(f"{a} {k}" for a, k in event.get("by_aspect", {}).items())
            self._parent.caption(
                T.MERGED.format(
                    evidence=event.get("evidence", 0), by_aspect=inert(by_aspect) or T.NONE
                )
            )
        elif event["node"] == "answer_text":
            self.close()
            if self._answer is None:
                self._answer = self._parent.empty()
            self._answer.markdown(inert(event["text"]) + " ▌")
        # The finished answer is shown by the page itself.

    def clear_answer(self) -> None:
        """Take away the answer shown as it was written: the page shows the finished one."""
        if self._answer is not None:
            self._answer.empty()
            self._answer = None

    def close(self) -> None:
        """Mark a round left open (a run that stopped early) as done."""
        if self._status is not None:
            self._status.update(state="complete", expanded=False)
            self._status = None

    def replay(self, events: Sequence[Mapping[str, Any]]) -> None:
        for event in stored_search(events):  # a stored trace: plain dicts of the same shapes
            self(event)
        self.close()

    def _open(self, n: int) -> DeltaGenerator:
        self.close()
        self._round = n
        status: DeltaGenerator = self._parent.status(
            T.ROUND_RUNNING.format(n=n), expanded=self._live
        )
        self._status = status
        return status

    def _current(self, n: int) -> DeltaGenerator:
        return self._status if self._status is not None and self._round == n else self._open(n)

    def _retrieved(self, box: DeltaGenerator, event: RetrieveEvent) -> None:
        lines = [
            T.ROUND_QUERY_LINE.format(
                query=inert(q["query"]),
                hits=q["hits"],
                counts=_counts(q.get("hits_by_strategy", {})),
            )
            for q in event.get("per_query", [])
        ] or [f"- {inert(q)}" for q in event.get("queries", [])]
        box.markdown("\n".join([T.ROUND_QUERIES, *lines]))
        box.markdown(T.ROUND_HITS_BY_STRATEGY.format(counts=_counts(event["hits_by_strategy"])))
        box.markdown(
            T.ROUND_NEW_EVIDENCE.format(new=event["new_evidence"], total=event.get("evidence", 0))
        )

    def _evaluated(self, box: Any, event: EvaluateEvent, n: int) -> None:
        judge = inert(T.JUDGE.get(event.get("judge", ""), event.get("judge", "")))
        missing = list(event.get("missing", []))
        if event.get("sufficient"):
            box.markdown(T.ROUND_VERDICT_OK.format(judge=judge))
            label = T.ROUND_SUFFICIENT.format(n=n)
        else:
            box.markdown(T.ROUND_VERDICT_MISSING.format(judge=judge))
            label = T.ROUND_MISSING.format(n=n, missing=_listed(missing))
        box.markdown(T.ROUND_COVERED.format(aspects=_listed(event.get("covered", []))))
        box.markdown(T.ROUND_MISSING_LINE.format(aspects=_listed(missing)))
        box.update(label=label, state="complete", expanded=False)
        self._status = None
