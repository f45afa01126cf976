"""Entity types from a closed vocabulary (issue 34, item 5): the schema sent to the server names
them as an enum, so a grammar-enforcing server keeps the model to it, and whatever a server
without grammar lets through is mapped onto the same names for Chinese and English documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI, _prompt_text
from zhixing.core.build.sanitize import clean_knowledge
from zhixing.core.config import Settings
from zhixing.core.llm.schemas import ENTITY_TYPES, ChunkKnowledge, ExtractedEntity
from zhixing.core.service import KnowledgeService

FAST = {"timeout_s": 2.0, "max_attempts": 2, "backoff_s": 0.01}

# What a 0.5B model wrote when it was free to (17 types for 45 entities), and a few more.
SPRAWL = {
    "concept": "concept",
    "概念": "concept",
    "基本概念": "concept",
    "Concepts": "concept",
    "漏洞": "vulnerability",
    "Vulnerabilities": "other",  # no rule for every plural; the point is that it stays closed
    "standards": "standard",
    "协议": "technology",
    "Protocol": "technology",
    "tool": "product",
    "credits": "other",
    "preloading": "other",
    "resources": "other",
    "": "concept",
}


def test_the_schema_offers_the_vocabulary_as_an_enum() -> None:
    schema = ChunkKnowledge.model_json_schema()
    entity_type = schema["$defs"]["ExtractedEntity"]["properties"]["type"]
    assert entity_type["enum"] == list(ENTITY_TYPES)
    assert len(ENTITY_TYPES) <= 15


@pytest.mark.parametrize(("written", "kept"), sorted(SPRAWL.items()))
def test_a_type_off_the_vocabulary_is_mapped_onto_it(written: str, kept: str) -> None:
    knowledge = ChunkKnowledge(
        entities=[ExtractedEntity(name="HSTS", type=written, description="")]
    )
    cleaned, rejected = clean_knowledge(knowledge, "HSTS is a header.", "graph")
    assert [e.type for e in cleaned.entities] == [kept]
    assert ("entity type outside the vocabulary (made 'other')" in rejected) == (
        kept == "other" and written.lower() != "other"
    )


def _responder(body: dict) -> dict:
    """A model without grammar that names types as it likes, in both languages."""
    chinese = "传输安全" in _prompt_text(body)
    types = (
        ["基本概念", "协议", "credits", "漏洞"] if chinese else ["Concepts", "preloading", "tool"]
    )
    names = (
        ["传输安全", "严格传输安全", "降级攻击", "证书"] if chinese else ["HSTS", "max-age", "curl"]
    )
    return {
        "questions": [{"question": "What does it require?", "line_start": 1, "line_end": 1}],
        "entities": [
            {"name": n, "type": t, "description": ""} for n, t in zip(names, types, strict=True)
        ],
        "relations": [],
    }


def test_a_graph_built_through_the_endpoint_has_only_the_vocabularys_types(
    tmp_path: Path, embedder
) -> None:
    english, chinese = tmp_path / "hsts.md", tmp_path / "hsts-zh.md"
    english.write_text("HSTS sets a max-age; curl shows the header.\n", encoding="utf-8")
    chinese.write_text("传输安全：严格传输安全防止降级攻击，证书必须有效。\n", encoding="utf-8")
    with FakeOpenAI(_responder) as fake:
        settings = Settings(
            home=tmp_path / "home", openai_base_url=fake.url, openai_api_key="sk-test"
        )
        with KnowledgeService(settings, embedder=embedder, llm_options=FAST) as svc:
            svc.kbs.create("kb", mode="graph")
            report = svc.builds.add("kb", [english, chinese])
            assert report.ok and report.degraded == 0, report.to_json()
            types = svc.graph.stats("kb").types
        sent = [b for b in fake.bodies() if "entities" in str(b.get("response_format", ""))]
    assert sent, "no chunk call carried the knowledge schema"
    assert all("'enum': ['concept'," in str(b["response_format"]) for b in sent)
    assert set(types) <= set(ENTITY_TYPES), types
    assert set(types) == {"concept", "technology", "other", "vulnerability", "product"}
