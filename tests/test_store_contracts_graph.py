"""The store contract suite, part 3: the question index and the entity graph, written as a build
writes them and read as search and the graph page read them, on every implementation in
tests/store_homes.py (`HOMES`), on a real home in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.store_homes import HOMES, Home, open_home
from zhixing.core.models import Chunk
from zhixing.core.store.graph_reads import MAX_DESCRIPTION


@pytest.fixture(params=sorted(HOMES))
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Home]:
    yield from open_home(request, tmp_path)


@dataclass
class Graph:
    """A knowledge base of one document with four chunks, for the graph to speak about."""

    home: Home
    kb: int
    doc: int
    chunks: list[int]

    def entity(self, key: str, type_: str = "concept", **attributes: str) -> int:
        return self.home.graph.create_entity(
            self.kb, key=key, type_=type_, name=key.upper(), attributes=attributes
        )


@pytest.fixture
def g(home: Home) -> Graph:
    kb = home.catalog.create_kb("kb", mode="graph")
    doc, chunks = home.catalog.add_document(
        kb.id,
        source="a.md",
        sha256="s",
        kind="md",
        title="A",
        pages=1,
        chunks=[Chunk(ordinal=i, text=f"chunk {i}") for i in range(4)],
    )
    return Graph(home, kb.id, doc, chunks)


# --- writing -----------------------------------------------------------------------------------


def test_questions_map_back_to_their_chunks(g: Graph) -> None:
    ids = g.home.graph.add_questions(
        g.kb, [(g.chunks[0], "what?", 1, 1), (g.chunks[2], "why?", 3, 4)]
    )
    assert len(set(ids)) == 2
    assert g.home.graph.question_chunks(ids) == {ids[0]: g.chunks[0], ids[1]: g.chunks[2]}
    assert g.home.graph.question_chunks([]) == {}


def test_an_entity_resolves_by_its_key_and_its_aliases_within_its_knowledge_base(g: Graph) -> None:
    sql = g.entity("sql injection", "weakness")
    g.home.graph.add_alias(g.kb, "sqli", "weakness", sql)
    g.home.graph.add_alias(g.kb, "sqli", "weakness", 999)  # a second claim on a name is ignored
    assert g.home.graph.resolve(g.kb, "sql injection", "weakness") == sql
    assert g.home.graph.resolve(g.kb, "sqli", "weakness") == sql
    assert g.home.graph.resolve(g.kb, "sqli", "concept") is None
    assert g.home.graph.resolve(g.kb + 1, "sqli", "weakness") is None
    assert g.home.graph.find_entities(g.kb, "sqli") == [sql]
    assert (
        g.home.graph.in_kb(g.kb, [sql, 999]) == [sql] and g.home.graph.in_kb(g.kb + 1, [sql]) == []
    )


def test_mentions_rebuild_names_aliases_and_descriptions_and_keep_first_attributes(
    g: Graph,
) -> None:
    x = g.entity("x", colour="red")
    g.home.graph.mention_entity(x, g.chunks[1], "X", "The second says so.", {"colour": "blue"})
    g.home.graph.mention_entity(x, g.chunks[0], "Ex", "The first says so.", {"size": "big"})
    g.home.graph.refresh([x])
    [entity] = g.home.graph.entities([x])
    assert (entity.name, entity.aliases) == ("X", ["Ex"])
    assert entity.description == "The first says so. The second says so."  # chunk order
    assert entity.attributes == {"colour": "red", "size": "big"}  # what it had first stays
    assert entity.chunks == [g.chunks[0], g.chunks[1]]
    assert sorted(g.home.graph.mentions_of([x])) == [(x, g.chunks[0]), (x, g.chunks[1])]
    assert g.home.graph.entity_text([x]) == {
        x: "X (Ex) [concept] The first says so. The second says so."
    }


def test_a_relation_weighs_its_mentions_and_a_symmetric_one_is_stored_once(g: Graph) -> None:
    a, b = g.entity("a"), g.entity("b")
    uses = g.home.graph.relate(g.kb, a, b, "uses", g.chunks[0], "A uses B.")
    assert g.home.graph.relate(g.kb, a, b, "uses", g.chunks[1], "A relies on B.") == uses
    one = g.home.graph.relate(g.kb, b, a, "related_to", g.chunks[0], "")
    assert g.home.graph.relate(g.kb, a, b, "related_to", g.chunks[1], "") == one
    g.home.graph.refresh([], [uses, one])
    edges = {r.id: r for r in g.home.graph.relations_of(a)}
    assert (edges[uses].weight, edges[uses].description) == (2.0, "A uses B. A relies on B.")
    assert (edges[one].source, edges[one].target) == (min(a, b), max(a, b))
    assert g.home.graph.stats(g.kb).relations == 2


def test_a_long_description_is_found_for_a_summary_and_replaced(g: Graph) -> None:
    x, short = g.entity("x"), g.entity("short")
    for i, chunk in enumerate(g.chunks):
        g.home.graph.mention_entity(x, chunk, "X", f"Sentence {i} " + "w" * 200, {})
    g.home.graph.mention_entity(short, g.chunks[0], "SHORT", "Brief.", {})
    long = g.home.graph.long_descriptions([x, short])
    assert list(long) == [x] and long[x][:2] == ("X", "concept") and len(long[x][2]) == 4
    assert sum(len(p) for p in long[x][2]) > MAX_DESCRIPTION
    g.home.graph.set_description(x, "A summary.")
    assert g.home.graph.entities([x])[0].description == "A summary."


def test_build_history_counts_extracted_chunks_merges_and_long_entities(g: Graph) -> None:
    assert g.home.graph.build_history(g.kb, g.chunks) == (4, 0, [])
    x = g.entity("x")
    g.home.graph.add_alias(g.kb, "ex", "concept", x)  # a merge by similarity
    for chunk in g.chunks[:3]:
        g.home.graph.mention_entity(x, chunk, "X", f"{chunk} " + "w" * 300, {})
    g.home.graph.mark_degraded([g.chunks[3]], "invalid LLM output")
    assert g.home.graph.build_history(g.kb, g.chunks) == (3, 1, [3])
    g.home.graph.mark_degraded(g.chunks)
    assert g.home.graph.build_history(g.kb, g.chunks) == (0, 0, [])


def test_forgetting_chunks_deletes_orphans_and_rebuilds_survivors(g: Graph) -> None:
    only, both, other = g.entity("only"), g.entity("both"), g.entity("other")
    g.home.graph.mention_entity(only, g.chunks[0], "ONLY", "Gone soon.", {})
    g.home.graph.mention_entity(both, g.chunks[0], "BOTH", "First.", {})
    g.home.graph.mention_entity(both, g.chunks[2], "BOTH", "Stays.", {})
    g.home.graph.mention_entity(other, g.chunks[2], "OTHER", "", {})
    gone = g.home.graph.relate(g.kb, only, other, "uses", g.chunks[2], "")  # its end goes
    kept = g.home.graph.relate(g.kb, both, other, "uses", g.chunks[2], "")
    said = g.home.graph.relate(g.kb, both, other, "part_of", g.chunks[0], "")  # its mention goes
    g.home.graph.refresh([only, both, other], [gone, kept, said])
    orphans, orphan_relations, survivors = g.home.graph.forget_chunks(g.chunks[:2])
    assert (orphans, orphan_relations, survivors) == ([only], sorted([gone, said]), [both])
    assert g.home.graph.entities([only]) == [] and g.home.graph.in_kb(g.kb, [both, other]) == [
        both,
        other,
    ]
    assert g.home.graph.entities([both])[0].description == "Stays."
    assert [r.id for r in g.home.graph.relations_of(both)] == [kept]
    assert g.home.graph.forget_chunks([]) == ([], [], [])


# --- reading -----------------------------------------------------------------------------------


@pytest.fixture
def star(g: Graph) -> tuple[Graph, dict[str, int]]:
    """hub -uses-> a (3 mentions), hub -uses-> b (1), a -is_a-> c, and d alone."""
    ids = {k: g.entity(k, "tool" if k == "d" else "concept") for k in ("hub", "a", "b", "c", "d")}
    for chunk in g.chunks[:3]:
        g.home.graph.relate(g.kb, ids["hub"], ids["a"], "uses", chunk, "")
    g.home.graph.relate(g.kb, ids["hub"], ids["b"], "uses", g.chunks[0], "")
    g.home.graph.relate(g.kb, ids["a"], ids["c"], "is_a", g.chunks[0], "")
    g.home.graph.refresh([], [r.id for r in g.home.graph.dump(g.kb)[1]])
    return g, ids


def test_stats_count_entities_by_type_and_relations(star: tuple[Graph, dict[str, int]]) -> None:
    g, _ = star
    stats = g.home.graph.stats(g.kb)
    assert (stats.entities, stats.relations, stats.types) == (5, 3, {"concept": 4, "tool": 1})


def test_the_neighbourhood_grows_by_hops_strongest_edges_first(
    star: tuple[Graph, dict[str, int]],
) -> None:
    g, ids = star
    nodes, edges = g.home.graph.neighbourhood(g.kb, [ids["hub"]], 1)
    assert nodes == [ids["hub"], ids["a"], ids["b"]] and len(edges) == 2
    nodes, edges = g.home.graph.neighbourhood(g.kb, [ids["hub"]], 2)
    assert nodes == [ids["hub"], ids["a"], ids["b"], ids["c"]] and len(edges) == 3
    nodes, _ = g.home.graph.neighbourhood(g.kb, [ids["hub"]], 2, limit=2)
    assert nodes == [ids["hub"], ids["a"]]
    assert g.home.graph.neighbourhood(g.kb, [ids["d"]], 3) == ([ids["d"]], [])


def test_degrees_and_the_ranking_of_the_best_connected(star: tuple[Graph, dict[str, int]]) -> None:
    g, ids = star
    assert g.home.graph.degrees([ids["hub"], ids["a"], ids["d"]]) == {
        ids["hub"]: 2,
        ids["a"]: 2,
        ids["d"]: 0,
    }
    ranked, total = g.home.graph.ranked_entities(g.kb, limit=2)
    assert ranked == [(ids["hub"], 2), (ids["a"], 2)] and total == 5
    ranked, total = g.home.graph.ranked_entities(g.kb, min_degree=2)
    assert total == 2
    assert g.home.graph.ranked_entities(g.kb, types=["tool"]) == ([(ids["d"], 0)], 1)


def test_relations_among_entities_and_broader_concepts(star: tuple[Graph, dict[str, int]]) -> None:
    g, ids = star
    among = g.home.graph.relations_among([ids["hub"], ids["a"], ids["c"]])
    assert [(r.source, r.target, r.weight) for r in among] == [
        (ids["hub"], ids["a"], 3.0),
        (ids["a"], ids["c"], 1.0),
    ]
    assert g.home.graph.broader([ids["a"]]) == ["C"] and g.home.graph.broader([ids["hub"]]) == []


def test_entities_come_in_the_order_asked_and_a_dump_in_id_order(
    star: tuple[Graph, dict[str, int]],
) -> None:
    g, ids = star
    asked = [ids["c"], ids["hub"]]
    assert [e.id for e in g.home.graph.entities(asked)] == asked
    entities, relations = g.home.graph.dump(g.kb)
    assert [e.id for e in entities] == sorted(ids.values())
    assert [r.id for r in relations] == sorted(r.id for r in relations) and len(relations) == 3
    assert g.home.graph.dump(g.kb + 1) == ([], [])
