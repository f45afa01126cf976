"""A graph built with a model holds at least the graph built without one (issue 34, item 3).

On the real model (Qwen2.5-Coder-0.5B) a graph-mode build of the two documents of
tests/test_real_llm.py gave 13 entities and 10 relations, the offline build 17 and 21: the
model's extraction replaced the offline one. Here the HTTP fake plays a model that names fewer
things than the heuristics, and one whose reply for a chunk is unusable; the graph is read back
as a file (`zhixing graph KB --export`) and compared with an offline build of the same documents.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from tests.command import zx
from tests.fake_openai import FakeOpenAI, _prompt_text, _schema_of, default_responder
from tests.test_real_llm import HSTS, ZH
from zhixing.core.llm.schemas import ENTITY_TYPES
from zhixing.core.store.graph import SYMMETRIC
from zhixing.core.text.entity_names import normalize_entity_name

UNUSABLE = "I am sorry, I cannot help with that document."


def _is_chunk_call(body: dict[str, Any]) -> bool:
    name, _ = _schema_of(body)
    return name == "ChunkKnowledge" or "Build mode:" in _prompt_text(body)


def _thin(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model that sees less than the heuristics: one or two entities a chunk, no relation."""
    if not _is_chunk_call(body):
        return default_responder(body)
    question = {"question": "What does the rule require?", "line_start": 1, "line_end": 1}
    if "口令" in _prompt_text(body):
        entities = [{"name": "Argon2id", "type": "technology", "description": "一种口令哈希算法。"}]
    else:
        entities = [
            # The heuristics call HSTS a control: the model's type wins, and it is one entity.
            {"name": "HSTS", "type": "standard", "description": "A response header policy."},
            {"name": "max-age", "type": "concept", "description": "How long HSTS holds."},
        ]
    return {"questions": [question], "entities": entities, "relations": []}


def _unusable_for_chinese(body: dict[str, Any]) -> dict[str, Any] | str:
    """The same model, whose every reply for the Chinese chunk is prose (its repair too)."""
    if _is_chunk_call(body) and "口令" in _prompt_text(body):
        return UNUSABLE
    return _thin(body)


def _docs(tmp_path: Path) -> list[str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hsts.md").write_text(HSTS, encoding="utf-8")
    (docs / "password.md").write_text(ZH, encoding="utf-8")
    return [str(docs / "hsts.md"), str(docs / "password.md")]


def _build(home: Path, docs: list[str], mode: str, env: dict[str, str] | None = None) -> dict:
    zx(home, "kb", "create", "web", "--mode", mode, env=env)
    ran = zx(home, "add", "web", *docs, "--json", env=env)
    return {"summary": json.loads(ran.stdout.strip().splitlines()[-1]), "stderr": ran.stderr}


class Graph:
    """A knowledge base's graph as `zhixing graph --export` writes it, by normalized names."""

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        path = home.parent / f"{home.name}.graphml"
        zx(home, "graph", "web", "--export", str(path), env=env)
        graph = nx.read_graphml(path)
        self.types: dict[str, str] = {}  # name or alias -> the type of its entity
        names: dict[str, set[str]] = {}
        for node, data in graph.nodes(data=True):
            spelled = [data["label"], *filter(None, data.get("aliases", "").split("; "))]
            names[node] = {normalize_entity_name(n) for n in spelled}
            for key in names[node]:
                self.types[key] = data["type"]
        self.labels = [normalize_entity_name(d["label"]) for _, d in graph.nodes(data=True)]
        self.relations = {
            (s, d["relation"], t)
            for source, target, d in graph.edges(data=True)
            for s in names[source]
            for t in names[target]
        }
        self.label_relations = {
            (
                normalize_entity_name(graph.nodes[s]["label"]),
                d["relation"],
                normalize_entity_name(graph.nodes[t]["label"]),
            )
            for s, t, d in graph.edges(data=True)
        }


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    """The same two documents built without a model: the floor a model build must reach."""
    tmp = tmp_path_factory.mktemp("offline")
    home = tmp / "home"
    built = _build(home, _docs(tmp), "graph")
    assert built["summary"]["degraded"] == 0, built
    graph = Graph(home)
    assert len(graph.labels) >= 15 and len(graph.label_relations) >= 15  # 17 and 21 measured
    return graph


def _endpoint(fake: FakeOpenAI) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-test"}


def _model_build(tmp_path: Path, fake: FakeOpenAI) -> tuple[dict, Graph]:
    """The two documents built in graph mode through `fake`: the build's summary, its graph."""
    built = _build(tmp_path / "home", _docs(tmp_path), "graph", _endpoint(fake))
    return built["summary"], Graph(tmp_path / "home", _endpoint(fake))


def _assert_holds_the_offline_graph(graph: Graph, offline: Graph) -> None:
    missing = [name for name in offline.labels if name not in graph.types]
    assert not missing, f"the model build lost offline entities: {missing}"
    # A symmetric relation is stored one way, from the entity made first (core/store/graph.py).
    lost = sorted(
        (s, kind, t)
        for s, kind, t in offline.label_relations - graph.relations
        if kind not in SYMMETRIC or (t, kind, s) not in graph.relations
    )
    assert not lost, f"the model build lost offline relations: {lost}"
    assert set(graph.types.values()) <= set(ENTITY_TYPES), graph.types


def test_a_model_that_names_fewer_things_than_the_heuristics_adds_to_the_offline_graph(
    tmp_path: Path, offline: Graph
) -> None:
    with FakeOpenAI(_thin) as fake:
        summary, graph = _model_build(tmp_path, fake)
    assert summary["failed"] == [] and summary["degraded"] == 0, summary
    _assert_holds_the_offline_graph(graph, offline)
    assert summary["offline_knowledge"] == 0, summary
    # The model's own entity is there, and where both name HSTS, the model's type won, once.
    assert graph.types["max age"] == "concept"
    assert graph.types["hsts"] == "standard" and graph.labels.count("hsts") == 1
    assert len(graph.labels) > len(offline.labels)
    # Questions stay the model's alone: one per chunk, none of the heuristics'.
    assert summary["questions"] == 2, summary


def test_a_chunk_whose_reply_is_unusable_keeps_its_offline_entities_and_says_so(
    tmp_path: Path, offline: Graph
) -> None:
    with FakeOpenAI(_unusable_for_chinese) as fake:
        summary, graph = _model_build(tmp_path, fake)
        asked = [b for b in fake.bodies() if _is_chunk_call(b) and "口令" in _prompt_text(b)]
    assert len(asked) == 2, "the unusable reply is asked to be repaired once, no more"
    assert summary["failed"] == [] and summary["degraded"] == 1, summary
    assert summary["fallbacks"] == {"no usable output after one repair": 1}, summary
    # The Chinese chunk's offline entities and relations are all there, from no model reply.
    chinese = [n for n in offline.labels if any("\u4e00" <= c <= "\u9fff" for c in n)]
    wanted = {normalize_entity_name(n) for n in ("Argon2id", "bcrypt", "MD5", "SHA-1")}
    assert wanted | set(chinese) <= set(graph.types), graph.types
    _assert_holds_the_offline_graph(graph, offline)
    assert summary["offline_knowledge"] == 1, summary
    assert summary["questions"] == 1, summary  # the English chunk's; none made up offline


def test_the_plain_summary_says_how_many_chunks_kept_their_offline_entities(
    tmp_path: Path,
) -> None:
    with FakeOpenAI(_unusable_for_chinese) as fake:
        home, env = tmp_path / "home", _endpoint(fake)
        zx(home, "kb", "create", "web", "--mode", "graph", env=env)
        ran = zx(home, "add", "web", *_docs(tmp_path), env=env)
    assert "1 degraded" in ran.stdout, ran.stdout
    assert "1 kept the built-in extractor's entities and relations" in ran.stderr, ran.stderr
    assert "0 fell back to their text alone" in ran.stderr, ran.stderr


SECTION = """## Rule {n}

Applications must regenerate the Session Identifier after login to prevent Session Fixation in
module {n}. Cookies set by module {n} carry the HttpOnly flag and the Secure flag, and Session
Fixation tests of module {n} run nightly. {filler}
"""


def test_the_heuristics_entities_cost_the_model_no_merge_or_summary_call(tmp_path: Path) -> None:
    """Ten chunks describe Session Fixation, which the model never names, past the
    600-character limit of a description; it is cut as offline, never sent to be summarized."""
    filler = " ".join(f"The module logs event {k} to the audit trail." for k in range(40))
    text = "# Session rules\n\n" + "\n".join(SECTION.format(n=n, filler=filler) for n in range(10))
    (tmp_path / "session.md").write_text(text, encoding="utf-8")
    with FakeOpenAI(_thin) as fake:
        built = _build(tmp_path / "home", [str(tmp_path / "session.md")], "graph", _endpoint(fake))
        roles = [_schema_of(b)[0] for b in fake.bodies()]
        graph = Graph(tmp_path / "home", _endpoint(fake))
    chunks = built["summary"]["chunks"]
    assert chunks >= 8, built["summary"]
    assert "session fixation" in graph.types  # the heuristics' entity, in every chunk
    assert roles == ["ChunkKnowledge"] * chunks, roles


def test_an_index_mode_build_with_a_model_is_unchanged_by_the_offline_graph(
    tmp_path: Path,
) -> None:
    """A guard: index mode has no graph, so the heuristics do not run beside the model."""
    with FakeOpenAI(_unusable_for_chinese) as fake:
        built = _build(tmp_path / "home", _docs(tmp_path), "index", _endpoint(fake))
        stats = json.loads(
            zx(tmp_path / "home", "graph", "web", "--json", env=_endpoint(fake)).stdout
        )
    summary = built["summary"]
    assert summary["degraded"] == 1 and summary["questions"] == 1, summary
    assert summary.get("offline_knowledge", 0) == 0, summary
    assert stats["entities"] == 0 and stats["relations"] == 0, stats
