"""The task agent offline (no LLM): the showcase audit of samples/springboot-shop against the
sample guideline, on a real knowledge base (SQLite + Milvus Lite in a temp home)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zhixing.core.config import Settings
from zhixing.core.errors import AccessError
from zhixing.core.service import KnowledgeService
from zhixing.core.task.audit_rules import clause_identifiers, identifier_pattern, topic_for
from zhixing.core.task.configuration import TaskContext
from zhixing.core.task.flow import route_after_execute, route_after_replan
from zhixing.core.task.tools import ToolBox
from zhixing.core.task.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SHOP = SAMPLES / "springboot-shop"
J = "src/main/java/com/example/shop"
TASK = "对这个 Java SpringBoot 项目进行代码审计，参考 @kb 中的规范"
GUIDE = "java-secure-coding-guideline.md"
# The guideline's clauses, in order: the revised plan's subtasks, one a clause.
GUIDE_CLAUSES = [
    "3.1 SQL 注入防护",
    "3.2 跨站脚本（XSS）防护",
    "3.3 反序列化安全",
    "3.4 日志安全",
    "3.5 密钥管理",
    "3.6 路径遍历防护",
]

# From samples/springboot-shop/README.md: (clause, file, acceptable lines) per planted issue.
PLANTED = [
    ("3.1", f"{J}/repository/ProductRepository.java", {37, 41}),
    ("3.1", f"{J}/repository/ProductRepository.java", {52}),
    ("3.2", f"{J}/controller/SearchController.java", {29}),
    ("3.3", f"{J}/controller/CartController.java", {24, 25}),
    ("3.4", f"{J}/service/UserService.java", {20}),
    ("3.5", f"{J}/util/TokenUtil.java", {11}),
    ("3.6", f"{J}/controller/FileController.java", {26}),
]
SAFE = [
    (f"{J}/repository/ProductRepository.java", range(23, 33)),
    (f"{J}/repository/ProductRepository.java", range(56, 70)),
    (f"{J}/controller/SearchController.java", range(30, 40)),
    (f"{J}/controller/CartController.java", range(29, 33)),
    (f"{J}/service/UserService.java", range(25, 29)),
    (f"{J}/util/TokenUtil.java", range(13, 29)),
    ("src/main/resources/application.properties", range(1, 12)),
    (f"{J}/controller/FileController.java", range(30, 40)),
]
INJECTION = (f"{J}/repository/ProductRepository.java", (34, 35))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # noqa: ANN001
    home = tmp_path_factory.mktemp("agent") / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb")
        assert svc.builds.add("kb", [SAMPLES / GUIDE]).ok
    return home


@pytest.fixture(scope="module")
def audit(home: Path, embedder):  # noqa: ANN001, ANN201
    events: list[dict] = []
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        result = svc.tasks.run(TASK, ["kb"], workspace=SHOP, on_event=events.append)
    return result, events


def run_on(home: Path, embedder, workspace: Path):  # noqa: ANN001, ANN201
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        return svc.tasks.run(TASK, ["kb"], workspace=workspace)


def test_every_planted_issue_is_found_and_cites_its_clause(audit) -> None:  # noqa: ANN001
    result, _ = audit
    for clause, file, lines in PLANTED:
        hits = [f for f in result.findings if f.file == file and f.line in lines]
        assert hits, f"no finding for clause {clause} at {file}:{sorted(lines)}"
        ref = hits[0].knowledge[0]
        assert ref.section.startswith(clause), (clause, ref.section)
        assert ref.document == GUIDE and ref.page == 1
        assert hits[0].code and hits[0].note == "unconfirmed heuristic"


def test_no_finding_on_a_safe_look_alike(audit) -> None:  # noqa: ANN001
    result, _ = audit
    for file, lines in SAFE:
        wrong = [
            f"{f.file}:{f.line}" for f in result.findings if f.file == file and f.line in lines
        ]
        assert not wrong, wrong
    assert len(result.findings) == len(PLANTED)


def test_the_plan_is_revised_into_the_guideline_clauses(audit) -> None:  # noqa: ANN001
    result, events = audit
    after = [s.title for s in result.plan_after]
    assert after == GUIDE_CLAUSES
    assert result.plan_before and result.plan_before != after
    assert all(s.knowledge and s.knowledge[0].document == GUIDE for s in result.plan_after)
    nodes = [e["node"] for e in events if "phase" not in e]
    assert (
        nodes.index("task_plan")
        < nodes.index("replan")
        < nodes.index("subtask")
        < nodes.index("report")
    )
    assert any(e.get("phase") == "research" for e in events)  # the agentic search, live


def test_every_tool_call_is_traced_and_bounded(audit) -> None:  # noqa: ANN001
    result, events = audit
    calls = [e for e in events if e["node"] == "tool_call"]
    results = [e for e in events if e["node"] == "tool_result"]
    assert len(calls) == len(results) == len(result.tool_calls) > 0
    per_subtask: dict[int, int] = {}
    for call in calls:
        per_subtask[call["subtask"]] = per_subtask.get(call["subtask"], 0) + 1
    assert max(per_subtask.values()) <= 6 and len(per_subtask) <= 8
    assert {c["tool"] for c in calls} <= {"grep", "list_files", "read_file", "search_knowledge"}


def test_the_report_shows_both_plans_and_every_finding_with_its_sources(audit) -> None:  # noqa: ANN001
    result, _ = audit
    report = result.report
    # A task asked in Chinese gets its report in Chinese (issue 17).
    assert report.startswith("# 任务报告")
    for heading in ("## 摘要", "### 研究之前", "### 修订后的计划", "## 发现"):
        assert heading in report
    for f in result.findings:
        assert f"`{f.file}:{f.line}`" in report
    assert "3.6 路径遍历防护 — java-secure-coding-guideline.md，第 1 页" in report
    assert "**知识库：** @kb" in report and "没有附加工作区" not in report
    shape = result.to_json()
    assert set(shape) == {
        "task",
        "plan_before",
        "plan_after",
        "report",
        "findings",
        "workspace",
        "warnings",
    }
    assert shape["workspace"] is True and shape["warnings"] == []
    assert set(shape["findings"][0]) >= {"title", "severity", "file", "line", "code", "knowledge"}
    assert set(shape["findings"][0]["knowledge"][0]) == {"document", "section", "page", "text"}


def test_the_offline_audit_is_the_same_with_or_without_the_injected_comment(
    audit,
    home: Path,
    embedder,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    """The heuristics never read the planted comment as an instruction: removing it changes
    nothing. (A model that obeys it, and the guards that stop it: test_task_injection.py.)"""
    result, _ = audit
    clean = tmp_path / "shop"
    shutil.copytree(SHOP, clean)
    path, (first, last) = INJECTION[0], INJECTION[1]
    lines = (clean / path).read_text(encoding="utf-8").splitlines(keepends=True)
    assert "AI AUDITORS" in lines[first - 1]
    lines[first - 1 : last] = ["    // (comment)\n", "    // (comment)\n"]  # keep the numbering
    (clean / path).write_text("".join(lines), encoding="utf-8")
    without = run_on(home, embedder, clean)
    assert [s.to_json() for s in without.plan_after] == [s.to_json() for s in result.plan_after]
    assert without.tool_calls == result.tool_calls
    assert [(f.file, f.line) for f in without.findings] == [
        (f.file, f.line) for f in result.findings
    ]
    assert not any("/etc/" in str(c["args"]) for c in result.tool_calls)
    assert all(c["tool"] != "read_file" for c in result.tool_calls)


@pytest.mark.parametrize(
    ("task", "warning", "heading"),
    [
        # as the agent page passes it: the `@kb` mention taken out of the text
        ("对这个 Java SpringBoot 项目进行代码审计，参考 中的规范", "没有附加工作区", "# 任务报告"),
        ("Audit this Java project against the guideline", "No workspace", "# Task report"),
    ],
)
def test_a_task_run_without_a_workspace_says_plainly_that_no_code_was_audited(
    home: Path,
    embedder,  # noqa: ANN001
    task: str,
    warning: str,
    heading: str,
) -> None:
    """Issue 17: it reported "0 findings" as if it had audited something."""
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        result = svc.tasks.run(task, ["kb"])
    assert result.findings == [] and result.workspace is False
    [said] = result.warnings
    assert said.startswith(warning)
    report = result.report
    assert report.startswith(heading) and said in report
    assert report.index(said) < report.index("##")  # before the summary, not after it
    assert "@kb" in report  # the knowledge base it consulted, though the task text lost it
    shape = result.to_json()
    assert shape["workspace"] is False and shape["warnings"] == [said]


def test_the_workspace_tools_refuse_paths_outside_the_workspace() -> None:
    events: list[dict] = []
    context = TaskContext(
        research=lambda text, sink: None,  # type: ignore[arg-type,return-value]
        search=lambda query, k: [],
        workspace=Workspace.from_dir(SHOP),
        max_tool_calls=3,
    )
    box = ToolBox(context, events.append, 1, [])
    out = box.run("read_file", {"path": "/etc/passwd"})
    assert out.startswith("<tool_output>\nRefused:") and "root:" not in out
    assert "Refused" in box.run("read_file", {"path": "../../../etc/passwd"})
    assert "Refused" in box.run("grep", {"pattern": "x", "glob": "/etc/*"})
    assert box.spent and "budget" in box.run("list_files", {})
    assert [e["ok"] for e in events if e["node"] == "tool_result"] == [False] * 4
    with pytest.raises(AccessError):
        Workspace.from_dir(SHOP).read_file("/etc/passwd")


def test_clause_identifiers_keep_the_forbidden_apis_and_leave_the_recommended_ones() -> None:
    text = (
        "禁止将外部输入拼入 SQL 后交给 `Statement.executeQuery` 或 `createStatement()` 执行。"
        "必须使用 `PreparedStatement` 与 `?` 占位符。"
    )
    assert clause_identifiers(text, prohibited_only=True) == [
        "Statement.executeQuery",
        "createStatement()",
    ]
    assert identifier_pattern(["Statement.executeQuery"]) == r"\bexecuteQuery\s*\("
    assert topic_for("3.6 路径遍历防护").key == "path"
    assert topic_for("1 范围") is None


def test_the_routers_execute_every_subtask_then_report() -> None:
    assert route_after_replan({"subtasks": []}) == "report"
    assert route_after_replan({"subtasks": [object()]}) == "execute"  # type: ignore[list-item]
    assert route_after_execute({"subtasks": [1, 2], "cursor": 1}) == "execute"  # type: ignore[typeddict-item]
    assert route_after_execute({"subtasks": [1, 2], "cursor": 2}) == "report"  # type: ignore[typeddict-item]
