"""`zhixing run` with a weak model (issue 34): one that writes its tool calls as text and one
that rejects every candidate. The model adds; it never subtracts what the offline run finds.

Both models are the OpenAI fake (a real HTTP server), driven by the CLI in this process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.command import zx
from tests.fake_openai import FakeOpenAI, _schema_of
from tests.test_task_llm import TASK, Auditor, _tool_results

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "samples" / "springboot-shop"
REPO = "src/main/java/com/example/shop/repository/ProductRepository.java"


class TextCaller(Auditor):
    """Writes each tool call as JSON text in `content` (bare, then fenced), `tool_calls` empty,
    the way a small model behind llama-server does; ends with a summary that is only a fence;
    rejects every candidate it is asked to review."""

    def __init__(self) -> None:
        super().__init__(verdict=lambda _: {"verdict": "rejected", "reason": "Looks safe to me."})

    def __call__(self, body: dict[str, Any]) -> Any:
        names = [t["function"]["name"] for t in body.get("tools") or []]
        if "grep" in names:
            self.executor_bodies.append(body)
            done = _tool_results(body)
            calls = [
                '{"name": "grep", "arguments": {"pattern": "executeQuery", "glob": "**/*.java"}}',
                '```json\n{"name": "read_file", "arguments": {"path": "'
                + REPO
                + '", "start": 40, "end": 55}}\n```',
                'Let me look.\n```json\n{"name": "list_files", "arguments": {"glob": "**/*.java"}}'
                "\n```",
            ]
            text = calls[len(done)] if len(done) < len(calls) else "```json"
            return {"_content": text}
        if _schema_of(body)[0] == "RevisedPlan":  # a plan it cannot write: the offline plan
            return {"subtasks": []}
        if _schema_of(body)[0] == "ToolTurn":  # nor a structured turn (core/task/turns.py)
            return {"_content": "```json"}
        return super().__call__(body)


class Silent(TextCaller):
    """Never calls a tool at all: every turn is a summary that says nothing."""

    def __call__(self, body: dict[str, Any]) -> Any:
        if body.get("tools"):
            return {"_content": "```json"}
        return super().__call__(body)


def _guideline_home(where: Path) -> Path:
    home = where / "home"
    zx(home, "kb", "create", "kb")
    zx(home, "add", "kb", str(ROOT / "samples" / "java-secure-coding-guideline.md"))
    return home


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _guideline_home(tmp_path_factory.mktemp("weak-model"))


def _run(home: Path, workspace: Path, sarif: Path, model: Any = None) -> dict[str, Any]:
    args = ("run", "kb", TASK, "--workspace", str(workspace), "--findings", str(sarif), "--json")
    if model is None:
        return json.loads(zx(home, *args, env={"OPENAI_BASE_URL": None}).stdout)
    with FakeOpenAI(responder=model) as fake:
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-test"}
        out = json.loads(zx(home, *args, env=env).stdout)
        model.bodies = fake.bodies()
        return out


def _where(findings: list[dict[str, Any]]) -> set[tuple[str, int]]:
    return {(f["file"], f["line"]) for f in findings}


@pytest.mark.parametrize("model", [TextCaller, Silent])
def test_a_weak_model_reports_every_issue_the_offline_run_reports_and_marks_the_ones_it_rejected(
    home: Path, tmp_path: Path, model: type[TextCaller]
) -> None:
    offline = _run(home, SHOP, tmp_path / "offline.sarif")
    scripted = model()
    with_model = _run(home, SHOP, tmp_path / "model.sarif", scripted)
    assert len(offline["findings"]) == 7
    assert _where(offline["findings"]) <= _where(with_model["findings"])
    rejected = [f for f in with_model["findings"] if f.get("disagreed")]
    assert rejected and all(f["disagreed"] == "Looks safe to me." for f in rejected)
    assert "模型不同意：`Looks safe to me.`" in with_model["report"]  # the task is Chinese
    sarif = json.loads((tmp_path / "model.sarif").read_text(encoding="utf-8"))
    results = sarif["runs"][0]["results"]
    assert len(results) == len(with_model["findings"])
    suppressed = [r for r in results if r.get("suppressions")]
    assert len(suppressed) == len(rejected)
    assert all(
        r["suppressions"]
        == [{"kind": "external", "status": "accepted", "justification": "Looks safe to me."}]
        for r in suppressed
    )
    assert "）：```json" not in with_model["report"]  # no subtask summed up as a bare fence


def test_tool_calls_written_as_text_are_executed_and_their_results_reach_the_next_turn(
    home: Path, tmp_path: Path
) -> None:
    model = TextCaller()
    _run(home, SHOP, tmp_path / "model.sarif", model)
    later = [_tool_results(b) for b in model.bodies if b.get("tools")]
    seen = "\n".join(r for results in later for r in results)
    assert "ProductRepository.java" in seen  # grep's hits
    assert f"{REPO}" in seen and "45|" in seen  # read_file's numbered lines
    assert "OrderController.java" in seen or "Controller.java" in seen  # list_files


SAFE = {
    "src/main/java/com/example/safe/ProductRepository.java": """package com.example.safe;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;

public class ProductRepository {
    private Connection connection;

    public ResultSet byCategory(String category) throws Exception {
        PreparedStatement ps = connection.prepareStatement(
            "SELECT * FROM products WHERE category = ?");
        ps.setString(1, category);
        return ps.executeQuery();
    }
}
""",
    "src/main/java/com/example/safe/SearchController.java": """package com.example.safe;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.util.HtmlUtils;

@RestController
public class SearchController {
    @GetMapping("/search")
    public String search(@RequestParam String q) {
        return "<p>" + HtmlUtils.htmlEscape(q) + "</p>";
    }
}
""",
}


def test_a_look_alike_safe_project_reports_nothing_with_the_weak_model(
    home: Path, tmp_path: Path
) -> None:
    safe = tmp_path / "safe"
    for name, text in SAFE.items():
        (safe / name).parent.mkdir(parents=True, exist_ok=True)
        (safe / name).write_text(text, encoding="utf-8")
    assert _run(home, safe, tmp_path / "offline.sarif")["findings"] == []
    assert _run(home, safe, tmp_path / "model.sarif", TextCaller())["findings"] == []


class Searcher(TextCaller):
    """Looks the topic up in the knowledge (as text calls) before it greps."""

    def __call__(self, body: dict[str, Any]) -> Any:
        if body.get("tools") and not _tool_results(body):
            self.executor_bodies.append(body)
            return {"_content": '{"name": "search_knowledge", "arguments": {"query": "SQL 注入"}}'}
        return super().__call__(body)


def test_a_subtasks_knowledge_search_costs_no_model_call_and_reaches_the_next_turn(
    tmp_path: Path,
) -> None:
    home = _guideline_home(tmp_path)  # its own: the module's home caches other tests' replies
    model = Searcher()
    _run(home, SHOP, tmp_path / "model.sarif", model)
    # The agentic loop's roles run once, for the task's research, however many subtasks
    # searched the knowledge: a search inside a subtask is one fused search, no model call
    # (a real 0.5B model spent minutes of plan/judge/answer calls per search before).
    plans = [b for b in model.bodies if _schema_of(b)[0] == "AgentPlan"]
    searched = [b for b in model.bodies if b.get("tools") and _tool_results(b)]
    assert len(plans) == 1, len(plans)
    seen = "\n".join(r for b in searched for r in _tool_results(b))
    assert "[K" in seen and "java-secure-coding-guideline.md" in seen  # the excerpts came back


class Generic(TextCaller):
    """Writes the plan a 0.5B model wrote on the showcase (issue 34): generic steps that cite
    nothing or only the scope, one on an audit topic the guideline has no clause for, and one
    on a topic the offline plan already has."""

    PLAN = [
        {"title": "性能检查", "goal": "检查性能问题"},
        {"title": "撰写安全审计报告", "goal": "写报告", "knowledge": [1]},
        {"title": "代码规范检查", "goal": "检查代码风格", "knowledge": [2, 99]},
        {"title": "SQL 注入", "goal": "查找拼接的 SQL", "patterns": ["executeQuery\\("]},
        {"title": "命令注入检查", "goal": "查找 Runtime.exec", "patterns": ["Runtime\\.exec"]},
        *({"title": f"安全检查 {n}", "goal": "检查"} for n in range(5)),
    ]

    def __call__(self, body: dict[str, Any]) -> Any:
        if _schema_of(body)[0] == "RevisedPlan":
            return {"subtasks": self.PLAN}
        return super().__call__(body)


def test_a_generic_model_plan_keeps_every_clause_of_the_offline_plan_and_adds_only_grounded_steps(
    tmp_path: Path,
) -> None:
    home = _guideline_home(tmp_path)  # its own: the module's home caches other tests' plans
    offline = _run(home, SHOP, tmp_path / "offline.sarif")
    with_model = _run(home, SHOP, tmp_path / "model.sarif", Generic())
    before = [s["title"] for s in offline["plan_after"]]
    after = [s["title"] for s in with_model["plan_after"]]
    # The offline plan in its order; its SQL subtask sharpened by the model's (the goal), the
    # command-injection step added (an audit topic with no clause); nothing generic.
    assert len(before) == 6 and after[0] == "SQL 注入" and after[1:6] == before[1:6]
    assert with_model["plan_after"][0]["knowledge"] == offline["plan_after"][0]["knowledge"]
    assert with_model["plan_after"][0]["goal"] == "查找拼接的 SQL"
    assert after[6:] == ["命令注入检查"]
    assert _where(offline["findings"]) <= _where(with_model["findings"])
