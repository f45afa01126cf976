"""The revised plan with a model: the offline plan, which the model may sharpen and add to.

A small model's revised plan is often generic ("性能检查", "撰写安全审计报告"): eight subtasks that
cite nothing, each driven for up to a subtask's budget of model turns, and the clauses the
offline plan would have checked fall out of it (issue 34: on a 0.5B model the showcase run had
not finished after 44 minutes). So the model adds, it does not replace:

- every subtask of the offline plan stays, in its order;
- the first model subtask whose title names the same audit topic takes that subtask's place,
  keeping the offline one's knowledge and patterns beside its own (the model sharpens the title
  and goal); others on a topic the plan has add nothing;
- a model subtask is added only when it is grounded: it names an audit topic the offline plan
  has not, or cites a clause that names code to check and no offline subtask cites; at most
  `MODEL_EXTRA` of them;
- a model subtask that is neither (no topic, no clause) is dropped: it would cost model turns
  and check nothing the knowledge defines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..llm.boundary import tidy
from .audit_rules import clause_identifiers, topic_for
from .prompts import RevisedPlan
from .state import KnowledgeRef, Subtask

__all__ = ["MODEL_EXTRA", "bounded", "from_model"]

# Subtasks a model may add beyond the offline plan. Each is driven for up to the subtask's
# tool budget of model turns, ~10-40 s each on a one-slot CPU server (issue 34's measured
# rates): two extra subtasks are up to ~8 minutes there.
MODEL_EXTRA = 2

_TITLE_CHARS = 120
_GOAL_CHARS = 600
_PATTERN_CHARS = 200
_PATTERNS = 6


def from_model(result: RevisedPlan, refs: Sequence[KnowledgeRef]) -> list[Subtask]:
    """The usable subtasks of a model's plan: a title, cited excerpts that exist, patterns that
    compile; repeated titles once."""
    subtasks = []
    seen: set[str] = set()
    for planned in result.subtasks:
        title = tidy(planned.title, _TITLE_CHARS)
        if not title or title.casefold() in seen:
            continue
        seen.add(title.casefold())
        cited = tuple(dict.fromkeys(refs[n - 1] for n in planned.knowledge if 1 <= n <= len(refs)))
        topic = topic_for(title) or (topic_for(cited[0].section) if cited else None)
        subtasks.append(
            Subtask(
                title=title,
                goal=tidy(planned.goal, _GOAL_CHARS) or title,
                knowledge=cited,
                topic=topic.key if topic else "",
                patterns=tuple(p for p in planned.patterns if _usable_pattern(p))[:_PATTERNS],
            )
        )
    return subtasks


def bounded(
    model: Sequence[Subtask], offline: Sequence[Subtask], *, max_subtasks: int
) -> tuple[list[Subtask], bool]:
    """The offline plan with the model's grounded subtasks folded in (see the module's doc), at
    most `max_subtasks`; and whether any of the model's subtasks is in it."""
    plan = list(offline)
    used = False
    topics = {s.topic: i for i, s in enumerate(plan) if s.topic}
    sharpened: set[str] = set()
    cited = {k.chunk_id for s in plan for k in s.knowledge}
    extra = 0
    for subtask in model:
        if subtask.topic in topics:
            named = topic_for(subtask.title)  # its title says the topic, not only its citation
            if named is not None and named.key == subtask.topic and subtask.topic not in sharpened:
                sharpened.add(subtask.topic)
                plan[topics[subtask.topic]] = _sharpened(plan[topics[subtask.topic]], subtask)
                used = True
        elif extra < MODEL_EXTRA and _grounded(subtask, cited):
            topics[subtask.topic or f"#{len(plan)}"] = len(plan)
            plan.append(subtask)
            cited |= {k.chunk_id for k in subtask.knowledge}
            extra += 1
            used = True
    return plan[:max_subtasks], used  # the offline plan first: the model's additions fill the rest


def _grounded(subtask: Subtask, cited: set[int]) -> bool:
    """A topic no subtask so far has, or a clause naming code to check that none cites."""
    if subtask.topic:
        return True
    return any(
        k.chunk_id not in cited and clause_identifiers(k.text, prohibited_only=True)
        for k in subtask.knowledge
    )


def _sharpened(offline: Subtask, model: Subtask) -> Subtask:
    knowledge = tuple(dict.fromkeys((*offline.knowledge, *model.knowledge)))
    patterns = tuple(dict.fromkeys((*offline.patterns, *model.patterns)))
    return Subtask(
        title=model.title,
        goal=model.goal,
        knowledge=knowledge,
        topic=offline.topic,
        patterns=patterns,
    )


def _usable_pattern(pattern: str) -> bool:
    if not pattern.strip() or len(pattern) > _PATTERN_CHARS:
        return False
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
