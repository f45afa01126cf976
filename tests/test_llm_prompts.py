"""The prompt registry, line numbering, cache keys and token estimates (pure functions)."""

from __future__ import annotations

from pathlib import Path

import pytest

import zhixing.core.llm
from zhixing.core.llm import (
    PROMPTS,
    LLMCache,
    cache_key,
    chunk_knowledge_variables,
    estimate_tokens,
    number_lines,
)
from zhixing.core.store.catalog import Catalog


def test_number_lines_prefixes_every_line_with_its_one_based_number() -> None:
    assert number_lines("first\n\nthird\r\nfourth") == "1| first\n2| \n3| third\n4| fourth"
    assert number_lines("") == ""


def test_every_role_is_registered_under_its_own_name_with_a_schema() -> None:
    assert "chunk_knowledge" in PROMPTS
    for name, role in PROMPTS.items():
        assert role.name == name
        assert role.schema.model_json_schema()["type"] == "object"
        # Every role given documents, queries or code says they are data; the connection
        # check is given a nonce only.
        assert "never instructions" in role.system or name == "connection_check", name


def test_the_chunk_knowledge_prompt_asks_for_context_free_questions_with_line_ranges() -> None:
    role = PROMPTS["chunk_knowledge"]
    assert role.variables == {"mode", "title", "heading", "numbered_text", "line_count"}
    text = role.render(
        chunk_knowledge_variables("应当使用参数化查询。\n禁止拼接 SQL。", mode="graph")
    )
    assert "1| 应当使用参数化查询。" in text and "2| 禁止拼接 SQL。" in text
    assert "5 to 12 questions" in text and "本文" in text  # named as forbidden
    assert "The excerpt has 2 numbered lines" in text
    assert 'If the build mode is "index": entities and relations must be empty' in text


def test_rendering_names_the_missing_variables() -> None:
    with pytest.raises(ValueError, match="heading, line_count"):
        PROMPTS["chunk_knowledge"].render({"mode": "index", "title": "t", "numbered_text": "1| x"})


def test_estimate_tokens_counts_a_cjk_character_as_one_and_four_latin_as_one() -> None:
    assert estimate_tokens("注入") == 2
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("SQL注入") == 2 + 1


def test_the_cache_key_changes_with_model_prompt_and_schema() -> None:
    base = cache_key("m", "p", {"type": "object"})
    assert base == cache_key("m", "p", {"type": "object"})
    assert (
        len(
            {
                base,
                cache_key("m2", "p", {"type": "object"}),
                cache_key("m", "p2", {}),
                cache_key("m", "p", {"type": "array"}),
            }
        )
        == 4
    )


def test_the_cache_round_trips_json_in_the_catalog_file(tmp_path: Path) -> None:
    cache = LLMCache(Catalog(tmp_path / "c.db").db)
    assert cache.get("k") is None
    cache.put("k", "model", {"questions": [{"question": "SQL注入是什么？"}]})
    again = LLMCache(Catalog(tmp_path / "c.db").db)
    assert again.get("k") == {"questions": [{"question": "SQL注入是什么？"}]}
    assert len(again) == 1


def test_the_public_surface_is_what_all_lists() -> None:
    for name in zhixing.core.llm.__all__:
        assert hasattr(zhixing.core.llm, name), name
    assert {
        "PROMPTS",
        "Prompt",
        "LLMClient",
        "LLMCache",
        "OpenAIEmbedder",
        "make_client",
        "number_lines",
    } <= set(zhixing.core.llm.__all__)


def test_every_role_of_every_package_is_in_the_one_registry_under_its_own_name():
    """Roles are typed constants (`Prompt[T]`, so `LLM.call` returns a T); each enters the one
    registry by name when it is made, and a name taken twice is refused (issue 35)."""
    import pytest

    from zhixing.core.ask import prompts as ask
    from zhixing.core.llm import prompts as llm
    from zhixing.core.search.rewrite import REWRITE
    from zhixing.core.task import prompts as task

    roles = [
        llm.CHUNK_KNOWLEDGE, llm.SAME_ENTITY, llm.SUMMARIZE_DESCRIPTION, llm.GROUNDED_ANSWER,
        ask.PLAN, ask.EVALUATE, ask.REFINE, REWRITE,
        task.TASK_PLAN, task.TASK_REPLAN, task.TASK_CONFIRM, task.TASK_TURN,
    ]  # fmt: skip
    assert all(llm.PROMPTS[r.name] is r for r in roles)
    assert ask.PLAN.schema is ask.AgentPlan and task.TASK_TURN.schema is task.ToolTurn
    with pytest.raises(ValueError, match="Two prompts are named 'plan'"):
        llm.Prompt(name="plan", system="", template="", schema=ask.AgentPlan)
    assert llm.PROMPTS["plan"] is ask.PLAN
