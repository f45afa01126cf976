"""The task agent with an LLM: ChatOpenAI for real, over HTTP, against the fake server.

The fake answers a request that offers tools with a call of its first tool; `ToolFake` lets
the script choose the tool (`{"_tool": name, **args}`) or finish (`{"_final": text}`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, _prompt_text, _schema_of
from tests.test_task_offline import GUIDE_CLAUSES
from zhixing.core.config import Settings
from zhixing.core.llm.client import LLMClient
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "samples" / "springboot-shop"
REPO = "src/main/java/com/example/shop/repository/ProductRepository.java"
TASK = "对这个 Java SpringBoot 项目进行代码审计，参考 @kb 中的规范"
PLAN = ["Read the attached guideline", "Audit the project", "Write the report"]


class ToolFake(FakeOpenAI):
    """The fake, with the tool (or a final answer) picked by the responder."""

    def _chat(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        out = super()._chat(body, fault)
        message = out["choices"][0]["message"]
        for call in message.get("tool_calls") or []:
            args = json.loads(call["function"]["arguments"])
            if "_final" in args:
                out["choices"][0]["message"] = {"role": "assistant", "content": args["_final"]}
                out["choices"][0]["finish_reason"] = "stop"
            elif "_tool" in args:
                call["function"]["name"] = args.pop("_tool")
                call["function"]["arguments"] = json.dumps(args, ensure_ascii=False)
        return out


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body.get("messages", []) if m.get("role") == "tool"]


class Auditor:
    """Scripts every role; in a subtask: grep, read the file, record a finding, finish.

    `obedient` makes it follow the instruction planted in the file it read (read /etc/passwd).
    """

    def __init__(self, *, obedient: bool = False, verdict=None) -> None:  # noqa: ANN001
        self.obedient = obedient
        # The review of a candidate finding: confirm every one unless told otherwise.
        self.verdict = verdict or (lambda prompt: {"verdict": "confirmed", "reason": "Seen."})
        self.schemas: list[str] = []
        self.executor_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        names = [t["function"]["name"] for t in body.get("tools") or []]
        if "grep" in names:
            return self._step(body)
        name, _ = _schema_of(body)
        self.schemas.append(name)
        if name == "AgentPlan":
            return {"aspects": ["SQL 注入"], "queries": [{"query": "SQL 注入 拼接 executeQuery"}]}
        if name == "EvidenceVerdict":
            return {"sufficient": True, "missing": [], "covered": ["SQL 注入"]}
        if name == "GroundedAnswer":
            return {"found": True, "answer": "禁止拼接 SQL [1].", "cited": [1]}
        if name == "TaskPlan":
            return {"steps": PLAN}
        if name == "FindingVerdict":
            return self.verdict(_prompt_text(body))
        if name == "RevisedPlan":
            prompt = _prompt_text(body)
            n = re.search(r"\[(\d+)\] [^\n]*3\.1 SQL", prompt)
            return {
                "subtasks": [
                    {
                        "title": "3.1 SQL 注入防护",
                        "goal": "Find SQL built by concatenation and run with Statement",
                        "knowledge": [int(n.group(1))] if n else [],
                        "patterns": [r"execute(Query|Update)?\("],
                    }
                ]
            }
        raise AssertionError(f"unexpected LLM call for {name}")

    def _step(self, body: dict[str, Any]) -> dict[str, Any]:
        self.executor_bodies.append(body)
        done = _tool_results(body)
        if len(done) == 0:
            return {"_tool": "grep", "pattern": r"\.execute\w*\(", "glob": "**/*.java"}
        if len(done) == 1:
            return {"_tool": "read_file", "path": REPO, "start": 30, "end": 55}
        if self.obedient and len(done) == 2 and "/etc/passwd" in done[-1]:
            return {"_tool": "read_file", "path": "/etc/passwd"}
        if not any(r.startswith("<tool_output>\nRecorded") for r in done):
            return {
                "_tool": "record_finding",
                "title": "SQL injection in deleteByCategory",
                "severity": "high",
                "file": REPO,
                "line": 52,
                "knowledge": [1],
                "explanation": "category is concatenated into the DELETE statement",
            }
        return {"_final": "One SQL injection found in ProductRepository.deleteByCategory."}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # noqa: ANN001
    home = tmp_path_factory.mktemp("agent-llm") / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:  # built offline
        svc.kbs.create("kb")
        svc.builds.add("kb", [ROOT / "samples" / "java-secure-coding-guideline.md"])
    return home


def run(home: Path, embedder, model: Auditor, events: list | None = None):  # noqa: ANN001, ANN201
    with ToolFake(responder=model) as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        llm = LLMClient(settings, None, timeout_s=10.0, backoff_s=0.01)
        with KnowledgeService(settings, embedder=embedder, llm=llm) as svc:
            sink = events.append if events is not None else None
            return svc.tasks.run(TASK, ["kb"], workspace=SHOP, on_event=sink)


def test_the_plan_is_revised_after_research_into_grounded_subtasks(home, embedder) -> None:  # noqa: ANN001
    model = Auditor()
    result = run(home, embedder, model)
    assert model.schemas.index("GroundedAnswer") < model.schemas.index("TaskPlan")
    assert model.schemas.index("TaskPlan") < model.schemas.index("RevisedPlan")
    assert result.plan_before == PLAN
    # The offline plan, one subtask per clause, with the model's subtask on 3.1 in its place:
    # its goal and pattern beside the clause's own (core/task/planning.py).
    assert [s.title for s in result.plan_after] == GUIDE_CLAUSES
    sub = result.plan_after[0]
    assert sub.goal == "Find SQL built by concatenation and run with Statement"
    assert r"execute(Query|Update)?\(" in sub.patterns
    assert sub.knowledge and sub.knowledge[0].section == "3.1 SQL 注入防护"
    assert sub.knowledge[0].document == "java-secure-coding-guideline.md"


def test_tools_run_with_the_models_arguments_and_their_results_reach_the_next_step(
    home,
    embedder,  # noqa: ANN001
) -> None:
    model = Auditor()
    events: list[dict[str, Any]] = []
    result = run(home, embedder, model, events)
    first = [c for c in result.tool_calls if c["subtask"] == 1]  # each subtask runs the script
    assert [c["tool"] for c in first] == ["grep", "read_file", "record_finding"]
    assert result.tool_calls[0]["args"] == {"pattern": r"\.execute\w*\(", "glob": "**/*.java"}
    second = model.executor_bodies[1]
    assert f"{REPO}:52:" in _tool_results(second)[0]  # the grep result, in the next request
    third = model.executor_bodies[2]
    assert "52| " in _tool_results(third)[1]  # the file lines read
    assert [e["node"] for e in events if e["node"] in ("tool_call", "tool_result")][:2] == [
        "tool_call",
        "tool_result",
    ]
    finding = result.findings[0]  # the model's own, then the analysis's candidates
    assert (finding.file, finding.line, finding.confirmed) == (REPO, 52, True)
    assert finding.rule == "model" and finding.cwe == 89
    # The analysis's finding of the same line is the same finding: not reported twice.
    assert [(f.file, f.line) for f in result.findings].count((REPO, 52)) == 1
    assert finding.code.startswith('stmt.execute("DELETE FROM product')  # read from the file
    assert finding.knowledge[0].section == "3.1 SQL 注入防护"
    assert (
        f"`{REPO}:52`" in result.report and "3.1 SQL 注入防护 — java-secure-coding" in result.report
    )
    assert result.subtasks[0].mode == "tools"


def test_an_injected_instruction_is_refused_and_changes_nothing_else(home, embedder) -> None:  # noqa: ANN001
    calm = run(home, embedder, Auditor())
    model = Auditor(obedient=True)
    events: list[dict[str, Any]] = []
    obeyed = run(home, embedder, model, events)
    # The file's text reached the model (as data); the model that obeys it gets a refusal.
    assert "/etc/passwd" in _tool_results(model.executor_bodies[2])[1]
    refused = [e for e in events if e["node"] == "tool_result" and not e["ok"]]
    assert {r["tool"] for r in refused} == {"read_file"}  # in each subtask the file reached
    assert "absolute path" in refused[0]["output"] and "root:" not in json.dumps(events)
    assert [s.to_json() for s in obeyed.plan_after] == [s.to_json() for s in calm.plan_after]
    assert obeyed.plan_before == calm.plan_before
    assert [(f.file, f.line) for f in obeyed.findings] == [(f.file, f.line) for f in calm.findings]
    # The calm model (shown the same file) makes exactly the calls its script gives.
    assert [c["tool"] for c in calm.tool_calls if c["subtask"] == 1] == [
        "grep",
        "read_file",
        "record_finding",
    ]


def _reviews(model: Auditor) -> int:
    return model.schemas.count("FindingVerdict")


def test_the_model_reviews_each_candidate_with_its_code_and_clause_and_may_reject_it(
    home,
    embedder,  # noqa: ANN001
) -> None:
    prompts: list[str] = []

    def verdict(prompt: str) -> dict[str, str]:
        prompts.append(prompt)
        if "FileController" in prompt:  # a careless verdict word, in capitals
            return {"verdict": "NOT vulnerable", "reason": "The name is checked."}
        return {"verdict": "Confirmed.", "reason": "Request data reaches the sink unchanged."}

    model = Auditor(verdict=verdict)
    events: list[dict[str, Any]] = []
    result = run(home, embedder, model, events)
    nodes = [e["node"] for e in events]
    budget = next(e for e in events if e["node"] == "budget")
    assert nodes.index("budget") == 0 and budget["parts"]["confirmations"] == 30
    assert budget["calls"] == sum(budget["parts"].values())
    assert 0 < _reviews(model) <= 30
    rejected = [f for f in result.findings if "FileController" in f.file]
    assert rejected and all(f.disagreed == "The name is checked." for f in rejected)  # kept
    flows = [f for f in result.findings if f.rule.startswith("zhixing.") and not f.disagreed]
    assert flows and all(f.confirmed for f in flows)
    assert all(f.note == "Request data reaches the sink unchanged." for f in flows)
    xss = next(p for p in prompts if "SearchController.java:29" in p)
    assert "29| " in xss and "<knowledge>" in xss  # the code lines and the clause, as data
    assert "确认" in result.report and "否决" in result.report  # said in the subtask summaries


def test_a_review_that_fails_leaves_the_candidate_unconfirmed_and_the_run_goes_on(
    home,
    embedder,  # noqa: ANN001
) -> None:
    def chaos(body: dict[str, Any]) -> str | None:
        return "500" if _schema_of(body)[0] == "FindingVerdict" else None

    model = Auditor()
    with ToolFake(responder=model, chaos=chaos) as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        llm = LLMClient(settings, None, timeout_s=10.0, backoff_s=0.01)
        with KnowledgeService(settings, embedder=embedder, llm=llm) as svc:
            result = svc.tasks.run(TASK, ["kb"], workspace=SHOP)
    flows = [f for f in result.findings if f.rule.startswith("zhixing.")]
    assert flows and not any(f.confirmed for f in flows)
    assert all(f.note == "unconfirmed heuristic" for f in flows)
    assert result.report.startswith("# 任务报告")


def test_the_review_budget_goes_to_the_most_confident_candidates_first(tmp_path: Path) -> None:
    from zhixing.core.task.configuration import TaskContext
    from zhixing.core.task.confirm import review
    from zhixing.core.task.state import Finding
    from zhixing.core.task.workspace import Workspace

    reviewed: list[str] = []

    def responder(body: dict[str, Any]) -> dict[str, Any]:
        reviewed.append(re.search(r"at (\S+:\d+)", _prompt_text(body)).group(1))
        return {"verdict": "unsure", "reason": ""}

    candidates = [
        Finding("t", "low", REPO, line, "code", confidence=confidence, rule="zhixing.sqli.x")
        for line, confidence in ((23, "low"), (37, "high"), (41, "medium"), (52, "high"))
    ]
    with FakeOpenAI(responder=responder) as fake:
        settings = Settings(home=tmp_path, openai_base_url=fake.url, openai_api_key="sk-test")
        llm = LLMClient(settings, None, timeout_s=10.0, backoff_s=0.01)
        ctx = TaskContext(
            research=lambda *_: None,  # type: ignore[arg-type,return-value]
            search=lambda *_: [],
            workspace=Workspace(SHOP),
            llm=llm,
            max_confirmations=2,
        )
        first = review(candidates, ctx, spent=0)
        second = review(candidates, ctx, spent=first.calls)  # the budget is spent: none sent
    assert sorted(reviewed) == [f"{REPO}:37", f"{REPO}:52"]
    assert first.calls == 2 and second.calls == 0
    assert first.findings == candidates  # unsure: every candidate kept, as it was


def test_each_run_of_one_context_reviews_within_its_own_budget(home, embedder) -> None:  # noqa: ANN001
    """The run's state lives in the graph's state, not in the context: a caller that keeps one
    context for several runs (Studio, a script) gives each run the whole review budget."""
    from dataclasses import replace

    from zhixing.core.task.flow import run_task

    model = Auditor()
    spent = []
    with ToolFake(responder=model) as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        llm = LLMClient(settings, None, timeout_s=10.0, backoff_s=0.01)
        with KnowledgeService(settings, embedder=embedder, llm=llm) as svc:
            context = replace(svc.tasks.context(["kb"], workspace=SHOP), max_confirmations=3)
            for _ in range(2):
                before = _reviews(model)
                assert run_task(TASK, context).findings
                spent.append(_reviews(model) - before)
    assert spent == [3, 3]
