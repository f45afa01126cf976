"""Every trace event type has a tag of its own (issue 35), so a front end's dispatcher that
compares `event["node"]` is narrowed to one type by mypy, with no cast."""

from __future__ import annotations

import typing

from zhixing.core import trace


def _tags(union: object) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind in typing.get_args(union):
        hints = typing.get_type_hints(kind)
        for tag in typing.get_args(hints["node"]):
            out.setdefault(tag, []).append(kind.__name__)
    return out


def test_no_two_event_types_share_a_tag():
    tags = _tags(trace.TraceEvent)
    assert {tag: kinds for tag, kinds in tags.items() if len(kinds) > 1} == {}
    assert len(tags) == len(typing.get_args(trace.TraceEvent))


def test_the_search_tags_are_the_search_events_tags():
    assert set(_tags(trace.AskEvent)) == trace.SEARCH_NODES
    assert not set(_tags(trace.TaskEvent)) & trace.SEARCH_NODES


def test_is_search_tells_a_searchs_event_from_a_task_agents():
    assert trace.is_search({"node": "plan", "round": 1, "aspects": [], "queries": [], "llm": False})
    assert not trace.is_search({"node": "task_plan", "plan": ["a"], "llm": False})
    assert not trace.is_search({"node": "probe", "probe": "q", "topic": "t", "sections": []})
