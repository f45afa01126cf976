"""Conversation memory for both agents: threads' turns, and follow-up questions.

Each conversation is a LangGraph thread (`thread_id` = the conversation's id, core/store/runs.py;
its tasks run on a thread of their own beside it, `<id>:task`).
The graphs are compiled with a SQLite checkpointer in the Zhixing home (core/agents/checkpoints.py), so a thread's state —
above all its `turns`, what was asked and answered before — is there when the next question of
that conversation runs. A run writes its checkpoint once, when it ends (`durability="exit"`),
and starts from fresh per-run fields (`fresh_run`), so one question's evidence never leaks
into the next question's answer; only the turns carry over.

A follow-up ("and for level 3?", "那三级呢？") is resolved to a question that stands alone
before anything is searched: by the plan's LLM call when a model is configured (it is shown
the earlier turns), else by `resolve_followup`, a language rule with no data of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Overwrite

from ..search.query_terms import key_terms

__all__ = [
    "HISTORY_TURNS",
    "fresh_run",
    "history_text",
    "on_thread",
    "resolve_followup",
    "thread_config",
    "turn_record",
    "usable_turns",
    "remember",
]

HISTORY_TURNS = 3  # earlier turns shown to the plan (and used by the offline rule)
_ANSWER_CHARS = 600  # of each earlier answer kept in the thread's memory

# Words that open a question leaning on the one before ("and for …", "what about …", "那…呢").
_FOLLOW_UP_START = re.compile(
    r"^\s*(?:and|also|what about|how about|same for|then|but|or|so)\b"
    r"|^\s*(?:那么?|还有|另外|同样|而|再|又|它|其|该|此|这个|那个)",
    re.IGNORECASE,
)
_FOLLOW_UP_END = re.compile(r"(?:呢|的呢|怎么样|如何)\s*[？?。.!！]*\s*$")
_PRONOUN = re.compile(r"\b(?:it|its|this|that|these|those|they|them)\b|[它其该此]", re.IGNORECASE)
# "level 3", "step 2", "第3级", "三级", "第二章": a word and a number, either way round.
_NUMBERED = re.compile(
    r"(?P<word>[A-Za-z][A-Za-z-]*)\s*(?P<num>\d+)\b"
    r"|第?(?P<cnum>[0-9一二三四五六七八九十]+)\s*(?P<cword>级|级别|章|节|条|层|步|版|类)"
)


MAX_TURNS = 20  # a thread remembers its last turns; older ones stay in the run log only


def remember(
    left: Sequence[Mapping[str, Any]], right: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The `turns` reducer: append, keeping the last MAX_TURNS (a long conversation's
    checkpoint stays small)."""
    return [*left, *right][-MAX_TURNS:]


def thread_config(thread: str | None) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}} if thread else {}


def fresh_run(inputs: Mapping[str, Any], accumulating: Mapping[str, Any]) -> dict[str, Any]:
    """A run's input on a thread: the state's accumulating fields start over (their reducers
    would otherwise add this run to the last one's), the thread's `turns` stay."""
    return {**inputs, **{k: Overwrite(v) for k, v in accumulating.items()}}


def on_thread(
    inputs: Mapping[str, Any],
    accumulating: Mapping[str, Any],
    checkpointer: BaseCheckpointSaver[Any] | None,
    thread: str | None,
) -> tuple[dict[str, Any], BaseCheckpointSaver[Any] | None, dict[str, Any]]:
    """A run's input, checkpointer and config: on a thread (a checkpointer and a thread id
    both) its `fresh_run` input and the config naming the thread; else neither."""
    if checkpointer is not None and thread:
        return fresh_run(inputs, accumulating), checkpointer, thread_config(thread)
    return dict(inputs), None, {}


def turn_record(question: str, resolved: str, answer: str, kbs: Sequence[str]) -> dict[str, Any]:
    """What a thread remembers of one turn (plain data: it lives in the checkpoint)."""
    return {
        "question": question,
        "resolved": resolved,
        "answer": answer[:_ANSWER_CHARS],
        "kbs": list(kbs),
    }


def usable_turns(
    turns: Sequence[Mapping[str, Any]], visible: Sequence[str] | None
) -> list[Mapping[str, Any]]:
    """The earlier turns this run may lean on: the last few, and only those whose knowledge
    bases the user may still read (a turn that cited a knowledge base since restricted is
    forgotten, not replayed into the next answer)."""
    allowed = None if visible is None else set(visible)
    kept = [t for t in turns if allowed is None or set(t.get("kbs", [])) <= allowed]
    return kept[-HISTORY_TURNS:]


def history_text(turns: Sequence[Mapping[str, Any]]) -> str:
    """The earlier turns for a prompt, oldest first; "(none)" for a first question."""
    if not turns:
        return "(none)"
    lines = []
    for t in turns:
        lines.append(f"Q: {t.get('resolved') or t.get('question', '')}")
        lines.append(f"A: {' '.join(str(t.get('answer', '')).split())[:300]}")
    return "\n".join(lines)


def is_followup(question: str) -> bool:
    """Whether a question leans on the one before: it opens or ends like a follow-up, points
    back with a pronoun, or names too little to search on (one key term or none)."""
    text = question.strip()
    if _FOLLOW_UP_START.search(text) or _FOLLOW_UP_END.search(text):
        return True
    return len(key_terms(text)) <= 1 or bool(_PRONOUN.search(text) and len(text) < 40)


def resolve_followup(question: str, turns: Sequence[Mapping[str, Any]]) -> str:
    """The question as it stands alone, from the earlier turns, without a model.

    A question that does not lean on the last one is returned as it is. One that does is
    read against the last question: a numbered item it names ("level 3") replaces the same
    item in the last question ("level 2"); otherwise it is added to the last question.
    """
    if not turns or not is_followup(question):
        return question.strip()
    last = str(turns[-1].get("resolved") or turns[-1].get("question", "")).strip()
    if not last:
        return question.strip()
    replaced = _replace_numbered(last, question)
    if replaced != last:
        return replaced
    rest = _FOLLOW_UP_START.sub("", question.strip()).strip(" ,，")
    return f"{last} {rest}".strip()


def _replace_numbered(last: str, question: str) -> str:
    """`last` with each numbered item of `question` put in place of the same item in it."""
    out = last
    for match in _NUMBERED.finditer(question):
        if match.group("word"):
            word, num = match.group("word"), match.group("num")
            pattern = re.compile(rf"\b({re.escape(word)})\s*\d+\b", re.IGNORECASE)
            out = pattern.sub(partial(_numbered, f" {num}"), out)
        else:
            word, num = match.group("cword"), match.group("cnum")
            pattern = re.compile(rf"(第?)[0-9一二三四五六七八九十]+\s*{re.escape(word)}")
            out = pattern.sub(partial(_numbered, f"{num}{word}"), out)
    return out


def _numbered(tail: str, match: re.Match[str]) -> str:
    """A numbered reference's replacement: what the earlier match opened with, then `tail`."""
    return f"{match.group(1)}{tail}"
