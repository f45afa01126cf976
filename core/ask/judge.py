"""The agentic loop's judge: the `evaluate` node, `(state, runtime) -> partial update`.

With an LLM in the context, one chat `evaluate` call over the top evidence says per aspect
whether it suffices; without one (or when the call fails), the coverage heuristic: an aspect is
covered when the evidence's whole sentences (core/text/sentences.py, the answer's own) hold at
least half of the terms that set it apart from the other aspects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from ..search.query_terms import key_terms
from ..text.question_words import asked_kinds, holds, is_cue, is_generic
from ..text.sentences import Sentence, asks_about_scope, hit_sentences
from ..trace import EvaluateEvent
from .configuration import AgentContext
from .nodes import call_llm, emit, normalize_query
from .prompts import EVALUATE, EvidenceVerdict
from .state import AgentState, Evidence

__all__ = ["evaluate"]

_EXCERPT_CHARS = 400  # of each evidence text shown to the judge
_JUDGED_EVIDENCE = 20


def _distinct_terms(terms: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Per aspect, the terms that set it apart: a frame shared by every aspect proves nothing,
    nor does a generic word ("管理" of 密钥管理 is found in any section on 会话管理)."""
    specific = {a: [w for w in t if not is_generic(w)] or list(t) for a, t in terms.items()}
    if len(specific) < 2:
        return specific
    shared = set.intersection(*(set(t) for t in specific.values()))
    return {a: [w for w in t if w not in shared] or list(t) for a, t in specific.items()}


def _holds(term: str, sentence: Sentence) -> bool:
    """A sentence holds a term in its words or its heading's (under "4 会话管理", "空闲会话在
    15 分钟后失效" is about 会话管理); a question word ("多久") is held by an answer of its kind."""
    kinds = asked_kinds(term) if is_cue(term) else ()
    if kinds:
        return holds(kinds[0], sentence.text)
    folded = term.casefold()
    return folded in sentence.text.casefold() or folded in sentence.heading.casefold()


def _gaps(terms: Mapping[str, list[str]], sentences: Sequence[Sentence]) -> dict[str, list[str]]:
    """Per aspect, the key terms no evidence sentence holds (the offline judge's input).

    The sentences are whole ones (core/text/sentences.py, the answer's own), each with the
    heading it stands under: a heading alone is not evidence, nor is a note on the document's
    scope unless the question asks about scope."""
    return {
        aspect: [w for w in words if not any(_holds(w, s) for s in sentences)]
        for aspect, words in _distinct_terms(terms).items()
    }


def _covered(words: Sequence[str], gaps: Sequence[str], has_evidence: bool) -> bool:
    # At least half of an aspect's terms must appear: one stray common word is not coverage.
    if not words:
        return has_evidence
    return 2 * (len(words) - len(gaps)) >= len(words)


def _as_aspects(names: Sequence[str], aspects: Sequence[str]) -> list[str]:
    """The listed aspects a judge meant by `names`: models respell, shorten or translate them
    ("session fixation" for "会话固定 (session fixation)"); a name matching none is dropped."""
    out: list[str] = []
    for name in names:
        key = normalize_query(name)
        if not key:
            continue
        match = next((a for a in aspects if normalize_query(a) == key), None)
        if match is None:
            match = next(
                (a for a in aspects if key in normalize_query(a) or normalize_query(a) in key),
                None,
            )
        if match is None:
            words = {w.casefold() for w in key_terms(name)}
            scored = [(len(words & {w.casefold() for w in key_terms(a)}), a) for a in aspects]
            best = max(scored, default=(0, ""))
            if best[0] and 2 * best[0] >= len(words):
                match = best[1]
        if match is not None and match not in out:
            out.append(match)
    return out


def _ranked(evidence: Mapping[int, Evidence]) -> list[Evidence]:
    return sorted(evidence.values(), key=lambda e: (e.round, e.rank, e.hit.chunk_id))


def _judge_with_llm(state: AgentState, runtime: Runtime[AgentContext]) -> EvidenceVerdict | None:
    if runtime.context.llm is None:
        return None
    shown = _ranked(state.get("evidence", {}))[:_JUDGED_EVIDENCE]
    excerpts = "\n".join(
        f"[{n}] ({e.aspect or 'question'}) {' '.join(e.hit.text.split())[:_EXCERPT_CHARS]}"
        for n, e in enumerate(shown, start=1)
    )
    variables = {
        "question": state["question"],
        "aspects": "\n".join(f"- {a}" for a in state.get("aspects", [])),
        "evidence": excerpts or "(none)",
    }
    return call_llm(runtime, EVALUATE, variables)


def evaluate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge, per aspect, whether the evidence suffices; name the aspects still missing."""
    aspects = state.get("aspects", [])
    hits = [e.hit for e in state.get("evidence", {}).values()]
    scope_ok = asks_about_scope(state.get("question", ""))
    sentences = [s for hit in hits for s in hit_sentences(hit, scope_ok=scope_ok)]
    gaps = _gaps(state.get("terms", {}), sentences)
    verdict = _judge_with_llm(state, runtime)
    if verdict is not None:
        sufficient = verdict.sufficient
        covered = _as_aspects(verdict.covered, aspects)
        missing = [] if sufficient else _as_aspects(verdict.missing, aspects)
        if not sufficient and not missing:
            missing = [a for a in aspects if a not in covered] or list(aspects)
        covered = [a for a in covered if a not in missing]
    else:
        distinct = _distinct_terms(state.get("terms", {}))
        found = bool(sentences)
        covered = [a for a in aspects if _covered(distinct.get(a, []), gaps.get(a, []), found)]
        missing = [a for a in aspects if a not in covered]
        sufficient = not missing
    emit(
        runtime,
        EvaluateEvent(
            node="evaluate",
            round=state["round"],
            sufficient=sufficient,
            covered=covered,
            missing=missing,
            judge="llm" if verdict is not None else "coverage",
        ),
    )
    gaps = {a: gaps.get(a) or key_terms(a) for a in missing}
    return {"sufficient": sufficient, "covered": covered, "missing": missing, "gaps": gaps}
