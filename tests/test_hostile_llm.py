"""Every LLM reply is untrusted input (issue 13): property tests, one per role.

Each test draws replies for one role from that role's own JSON schema (tests/hostile_llm.py:
hypothesis-jsonschema, then mangled as careless models do), serves them through the real HTTP
fake so `ChatOpenAI` parses them, and checks what a user would: the build, the search, the ask
or the task finishes; nothing raises past the role's boundary; what is stored is well formed.
Fixed seed (`derandomize`) and a bounded number of examples, so `make test` stays quick.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fake_openai import FakeOpenAI, _prompt_text
from tests.hostile_llm import HostileModel, replies, tool_turns
from zhixing.core.answer_reply import NOT_FOUND_EN, NOT_FOUND_ZH
from zhixing.core.ask.prompts import AgentPlan, EvidenceVerdict, RefinedQueries
from zhixing.core.config import Settings
from zhixing.core.llm.prompts import EntityDescription, GroundedAnswer, SameEntity
from zhixing.core.llm.schemas import ChunkKnowledge
from zhixing.core.search.rewrite import QueryRewrites
from zhixing.core.service import KnowledgeService
from zhixing.core.task.prompts import RevisedPlan, TaskPlan

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "samples" / "springboot-shop"

_FAST = dict(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_counter = itertools.count()

DOC = """# Session management {n}

Applications must regenerate the session identifier after login to prevent Session Fixation.
Cookies carry the HttpOnly and Secure flags; idle sessions expire after 15 minutes.

## SQL 注入防护 {n}

禁止使用字符串拼接构造 SQL 语句，必须使用参数化查询（PreparedStatement）防止 SQL 注入。
"""


@pytest.fixture(scope="module")
def model() -> HostileModel:
    return HostileModel()


@pytest.fixture(scope="module")
def fake(model: HostileModel):
    with FakeOpenAI(model, retry_after="0") as server:
        yield server


def _seeded(tmp_path_factory, fake: FakeOpenAI, embedder):
    """A service on the hostile model whose graph knowledge base "kb" holds the seed document."""
    home = tmp_path_factory.mktemp("hostile") / "home"
    settings = Settings(
        home=home, openai_base_url=fake.url, openai_api_key="sk-test", llm_concurrency=4
    )
    service = KnowledgeService(
        settings, embedder=embedder, llm_options={"backoff_s": 0.01, "timeout_s": 5}
    )
    service.kbs.create("kb", mode="graph")
    docs = home.parent / "seed"
    docs.mkdir()
    (docs / "seed.md").write_text(DOC.format(n="seed"), encoding="utf-8")
    assert service.builds.add("kb", [docs / "seed.md"]).ok
    yield service
    service.close()


@pytest.fixture(scope="module")
def builder(tmp_path_factory, fake: FakeOpenAI, embedder):
    """The build roles' service: each of their examples adds a document or a knowledge base."""
    yield from _seeded(tmp_path_factory, fake, embedder)


@pytest.fixture(scope="module")
def svc(tmp_path_factory, fake: FakeOpenAI, embedder):
    """The search, ask and task roles' service, apart from the build roles' one: their searches
    scan the seed's segment in Milvus Lite, not those of the forty-odd builds the build examples
    run (after them the task examples took twice as long)."""
    yield from _seeded(tmp_path_factory, fake, embedder)


def _doc(folder: Path) -> Path:
    n = next(_counter)
    path = folder / f"doc-{n}.md"
    path.write_text(DOC.format(n=n), encoding="utf-8")
    return path


def _graph_is_well_formed(svc: KnowledgeService) -> None:
    db = svc._home.catalog.db
    dangling = db.execute(
        "SELECT COUNT(*) FROM relations r WHERE NOT EXISTS (SELECT 1 FROM entities e"
        " WHERE e.id = r.source_id) OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id ="
        " r.target_id)"
    ).fetchone()[0]
    assert dangling == 0, "a relation points at a missing entity"
    assert (
        db.execute("SELECT COUNT(*) FROM relations WHERE source_id = target_id").fetchone()[0] == 0
    )
    names = [r[0] for r in db.execute("SELECT name FROM entities")]
    assert all(n.strip() for n in names), "an entity has an empty name"
    assert all(len(n) <= 120 for n in names)
    pairs = db.execute(
        "SELECT COUNT(*), COUNT(DISTINCT entity_id || ':' || chunk_id) FROM entity_mentions"
    ).fetchone()
    assert pairs[0] == pairs[1], "a duplicate mention"


# --- the build roles ---------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=30, **_FAST)
@given(reply=replies(ChunkKnowledge))
def test_any_extraction_reply_leaves_the_document_indexed_and_the_graph_well_formed(
    builder, model, tmp_path_factory, reply
) -> None:
    model.attack = {"ChunkKnowledge": reply}
    doc = _doc(tmp_path_factory.mktemp("docs"))
    report = builder.builds.add("kb", [doc])
    assert report.ok and len(report.added) == 1 and report.chunks > 0, report.to_json()
    kb = builder.kbs.get("kb")
    state = builder._home.catalog.document_states(kb.id)
    assert any(s.status == "indexed" for source, s in state.items() if source.endswith(doc.name))
    assert report.degraded == sum(report.fallbacks.values())
    _graph_is_well_formed(builder)


@settings(max_examples=12, **_FAST)
@given(verdict=replies(SameEntity), summary=replies(EntityDescription))
def test_any_merge_verdict_or_summary_reply_keeps_the_build_going(
    builder, model, tmp_path_factory, verdict, summary
) -> None:
    n = next(_counter)
    long = "SQL injection lets an attacker change a query by concatenated input. " * 6

    def knowledge(body: dict[str, Any]) -> dict[str, Any]:
        english = "Build mode: graph" in _prompt_text(body) and "Session" in _prompt_text(body)
        name = "SQL injection" if english else "SQL注入"
        return {
            "questions": [{"question": f"What is {name} {n}?", "line_start": 1, "line_end": 2}],
            "entities": [
                {"name": name, "type": "vulnerability", "description": f"{long} ({name})"},
                {"name": f"Parameterized query {n}", "type": "control", "description": long},
            ],
            "relations": [
                {"source": f"Parameterized query {n}", "target": name, "type": "prevents"}
            ],
        }

    model.attack = {"SameEntity": verdict, "EntityDescription": summary}
    model.fallback = knowledge
    try:
        builder.kbs.create(f"merge-{n}", mode="graph")
        folder = tmp_path_factory.mktemp("merge")
        (folder / "en.md").write_text(DOC.format(n=n).split("##")[0], encoding="utf-8")
        (folder / "zh.md").write_text("## SQL 注入防护\n\n禁止拼接 SQL。\n", encoding="utf-8")
        report = builder.builds.add(f"merge-{n}", [folder / "en.md", folder / "zh.md"])
    finally:
        from tests.fake_openai import default_responder

        model.fallback = default_responder
    assert report.ok, report.to_json()
    _graph_is_well_formed(builder)
    kb = builder.kbs.get(f"merge-{n}")
    rows = builder._home.catalog.db.execute(
        "SELECT name, description FROM entities WHERE kb_id = ?", (kb.id,)
    ).fetchall()
    assert rows and all(description.strip() for _, description in rows)


@pytest.fixture(scope="module")
def function_calling(tmp_path_factory, embedder):
    """(a service whose model reads replies through function calling, its hostile model)."""
    model = HostileModel()
    with FakeOpenAI(model) as server:
        home = tmp_path_factory.mktemp("fc") / "home"
        settings = Settings(
            home=home,
            openai_base_url=server.url,
            openai_api_key="sk-test",
            structured_output="function_calling",
        )
        with KnowledgeService(settings, embedder=embedder, llm_options={"backoff_s": 0.01}) as s:
            s.kbs.create("kb", mode="graph")
            yield s, model


@pytest.mark.slow
@settings(max_examples=12, **_FAST)
@given(reply=replies(ChunkKnowledge))
def test_function_calling_extraction_replies_are_read_the_same_way(
    function_calling, tmp_path_factory, reply
) -> None:
    service, model = function_calling
    model.attack = {"ChunkKnowledge": reply}
    report = service.builds.add("kb", [_doc(tmp_path_factory.mktemp("fc-docs"))])
    assert report.ok and report.chunks > 0, report.to_json()
    _graph_is_well_formed(service)


# --- the search roles --------------------------------------------------------------------------


@settings(max_examples=15, **_FAST)
@given(reply=replies(QueryRewrites))
def test_any_rewrite_reply_still_gives_a_search(svc, model, reply) -> None:
    model.attack = {"QueryRewrites": reply}
    hits = svc.search.query(f"How long may an idle session last? {next(_counter)}", ["kb"])
    assert hits and all(h.text for h in hits)


@settings(max_examples=20, **_FAST)
@given(reply=replies(GroundedAnswer))
def test_any_answer_reply_is_grounded_or_the_plain_sentence(svc, model, reply) -> None:
    model.attack = {"GroundedAnswer": reply}
    question = f"How long may an idle session last? {next(_counter)}"
    hits = svc.search.query(question, ["kb"], strategies=["keyword"])
    answer = svc.search.summarize(question, hits)
    if answer.found:
        assert answer.answer.strip()
        assert answer.citations and all(1 <= c.n <= len(hits) for c in answer.citations)
        assert {c.chunk_id for c in answer.citations} <= {h.chunk_id for h in hits}
    else:
        assert answer.answer in (NOT_FOUND_EN, NOT_FOUND_ZH)


@pytest.mark.slow
@settings(max_examples=15, **_FAST)
@given(plan=replies(AgentPlan), verdict=replies(EvidenceVerdict), refined=replies(RefinedQueries))
def test_any_planner_judge_or_refiner_reply_ends_in_an_answer(
    svc, model, plan, verdict, refined
) -> None:
    model.attack = {"AgentPlan": plan, "EvidenceVerdict": verdict, "RefinedQueries": refined}
    result = svc.search.ask(
        f"会话超时和 SQL 注入分别有什么要求？{next(_counter)}", ["kb"], max_rounds=3
    )
    assert 1 <= len(result.rounds) <= 3
    assert result.answer.answer.strip()
    assert all(1 <= c.n <= len(result.answer.citations) for c in result.answer.citations)


def test_a_judge_that_never_says_enough_stops_at_the_round_limit(svc, model) -> None:
    model.attack = {
        "EvidenceVerdict": {"sufficient": False, "missing": ["everything"], "covered": []},
        "RefinedQueries": {"queries": ["another query", "yet another"]},
    }
    result = svc.search.ask(f"What must cookies carry? {next(_counter)}", ["kb"], max_rounds=3)
    assert len(result.rounds) == 3
    assert result.answer.found  # the evidence it did find is still answered from


# --- the task roles ----------------------------------------------------------------------------


@settings(max_examples=10, **_FAST)
@given(
    plan=replies(TaskPlan),
    replan=replies(RevisedPlan),
    turns=tool_turns(),
)
@pytest.mark.slow
def test_any_task_planner_or_tool_call_reply_ends_in_a_report(
    svc, model, plan, replan, turns
) -> None:
    model.attack = {"TaskPlan": plan, "RevisedPlan": replan}
    model.turns = list(turns)
    result = svc.tasks.run(f"审计这个项目的 SQL 注入 {next(_counter)}", ["kb"], workspace=SHOP)
    assert result.report.strip() and result.plan_before and result.plan_after
    for finding in result.findings:  # a finding is always a real line of a workspace file
        lines = (SHOP / finding.file).read_text(encoding="utf-8").splitlines()
        assert 1 <= finding.line <= len(lines)
        assert finding.code == lines[finding.line - 1].strip()
    known = {"grep", "read_file", "list_files", "search_knowledge", "record_finding"}
    results = [e for e in result.events if e.get("node") == "tool_result"]
    assert all(not e["ok"] for e in results if e["tool"] not in known)  # refused, never run
    assert all(e["output"].startswith("Refused:") for e in results if not e["ok"])


@pytest.mark.parametrize(
    "turn",
    [
        [{"name": "shell", "arguments": {"cmd": "rm -rf /"}}],
        [{"name": "read_file", "arguments": {"path": "../../../../etc/passwd"}}],
        [{"name": "read_file", "arguments": '{"path": "pom.xml", "start": '}],
        [{"name": "grep", "arguments": {"pattern": "["}}],
        [
            {
                "name": "record_finding",
                "arguments": {"title": "x", "severity": "high", "file": "pom.xml", "line": 99999},
            }
        ],
    ],
)
def test_each_bad_tool_call_is_refused_and_the_subtask_goes_on(svc, model, turn) -> None:
    model.attack = {
        "TaskPlan": {"steps": ["Audit"]},
        "RevisedPlan": {"subtasks": [{"title": "SQL 注入", "goal": "Find SQL concatenation"}]},
    }
    model.turns = [turn, {"_content": "Nothing found."}]
    result = svc.tasks.run(f"审计 SQL 注入 {next(_counter)}", ["kb"], workspace=SHOP)
    refused = [e for e in result.events if e.get("node") == "tool_result" and not e["ok"]]
    assert refused and refused[0]["output"].startswith("Refused:")
    # The model recorded nothing that stands (the data-flow analysis's candidates are its own).
    assert not [f for f in result.findings if f.rule == "model"]
    # Refused calls inspect nothing, so the offline scan stands in for the step (issue 34).
    assert result.subtasks[0].mode == "offline, model reviewing"
