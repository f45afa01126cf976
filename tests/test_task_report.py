"""The task report (core/task/report.py): the task's language, the knowledge bases it used, and a
plain warning when no workspace was attached (issue 17)."""

from __future__ import annotations

from zhixing.core.task.report import no_workspace_warning, render_report
from zhixing.core.task.state import HEURISTIC_NOTE, Finding, KnowledgeRef, Subtask, SubtaskOutcome

REF = KnowledgeRef(document="guide.md", section="3.1 SQL 注入防护", page=1, text="…")
SUBTASK = Subtask(title="3.1 SQL 注入防护", goal="查找 SQL 注入。", knowledge=(REF,))
OUTCOME = SubtaskOutcome(
    index=1, title=SUBTASK.title, summary="1 项候选发现。", tool_calls=2, mode="offline", findings=1
)
FINDING = Finding(
    title="SQL injection: string concatenation",
    severity="high",
    file="src/Repo.java",
    line=37,
    code='String q = "SELECT * FROM t WHERE id=" + id;',
    knowledge=(REF,),
    note=HEURISTIC_NOTE,
)


def _report(task: str, **kwargs: object) -> str:
    arguments: dict[str, object] = {
        "task": task,
        "plan_before": ["第一步"],
        "subtasks": [SUBTASK],
        "outcomes": [OUTCOME],
        "findings": [FINDING],
        "knowledge_bases": ["java规范", "owasp"],
    }
    return render_report(**(arguments | kwargs))  # type: ignore[arg-type]


def test_a_chinese_task_gets_chinese_headings_and_sentences_and_names_its_knowledge_bases():
    report = _report("审计这个项目的 SQL 注入")
    assert report.startswith("# 任务报告\n")
    assert "**知识库：** @java规范、@owasp" in report
    for line in (
        "## 摘要",
        "执行了 1 个子任务；1 项发现（高 1 项）。",
        "## 计划",
        "## 子任务",
        "## 发现",
    ):
        assert line in report
    assert "### 1. [高] SQL injection: string concatenation" in report
    assert "- 依据：3.1 SQL 注入防护 — guide.md，第 1 页" in report
    assert "- 备注：未确认的启发式结果" in report and "（离线，2 次工具调用，1 项发现）" in report
    for english in ("Task report", "Summary", "Findings", "finding(s)", "Evidence", "Note:"):
        assert english not in report


def test_an_english_task_gets_the_english_report():
    report = _report("Audit this project for SQL injection")
    assert report.startswith("# Task report\n")
    assert "**Knowledge bases:** @java规范, @owasp" in report
    assert "1 subtask(s) run; 1 finding(s) (1 high)." in report
    assert "- Note: unconfirmed heuristic" in report


def test_without_a_workspace_the_report_opens_with_the_warning_and_audits_nothing():
    for task in ("审计这个项目", "Audit this project"):
        report = _report(task, findings=[], outcomes=[], workspace=False)
        warning = no_workspace_warning(task)
        summary = report.index("\n## ")
        assert warning in report[:summary]  # said before anything else
        assert ("没有发现。" not in report) and ("No findings." not in report)
    assert no_workspace_warning("审计这个项目").startswith("没有附加工作区")
    assert no_workspace_warning("Audit this project").startswith("No workspace")
    with_one = _report("Audit this project", findings=[], outcomes=[])
    assert "No findings." in with_one and "No workspace" not in with_one
