"""The agent page's tasks, driven by AppTest: the showcase audit of the sample project."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import open_page
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
TASK = "对这个 Java SpringBoot 项目进行代码审计，参考 @kb 中的规范"


@pytest.fixture(scope="module")
def built_home(tmp_path_factory, embedder) -> Path:
    home = tmp_path_factory.mktemp("built") / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        svc.builds.add("kb", [ROOT / "samples" / "java-secure-coding-guideline.md"])
    return home


@pytest.fixture
def home(built_home, app_home):
    """A copy of the built home, for the app."""
    shutil.copytree(built_home, app_home)
    return app_home


def _task_mode() -> AppTest:
    return open_page("agent", timeout=180)


def test_the_showcase_audit_renders_research_plans_subtasks_and_the_report(home):
    at = _task_mode()
    assert at.checkbox(key="agent-sample").value  # the sample project, until one is uploaded
    at.chat_input(key="agent-input").set_value(TASK).run()
    assert not at.exception, at.exception
    labels = [s.label for s in at.status]
    assert labels[0].startswith("知识调研 ·")
    subtasks = [label for label in labels if label.startswith("子任务 ")]
    assert len(subtasks) == 6 and all(label.endswith("✓") for label in subtasks)
    assert any("计划已根据知识库修订" in i.value for i in at.info)  # the plan changed
    report = " ".join(m.value for m in at.markdown)
    for where in ("ProductRepository.java:52", "CartController.java:24", "TokenUtil.java:11"):
        assert where in report
    assert "3.1 SQL 注入防护" in report  # findings cite the clause
    # The report as Markdown and JSON, the findings as SARIF and CSV.
    assert [b.label for b in at.download_button] == [
        "下载报告（Markdown）",
        "下载 JSON",
        "下载发现（SARIF）",
        "下载发现（CSV）",
    ]
    assert any(c.value.startswith("数据流分析：") for c in at.caption)  # the analysis, live
    # The report stays after another rerun (say, a widget change).
    at.run()
    assert "ProductRepository.java:52" in " ".join(m.value for m in at.markdown)


def test_an_uploaded_archive_is_the_workspace_and_traversal_is_refused(home):
    at = _task_mode()
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../../etc/passwd", "root:x:0:0")
    at.file_uploader(key="agent-archive").upload("evil.zip", evil.getvalue(), "application/zip")
    at.run()
    at.chat_input(key="agent-input").set_value(TASK).run()
    assert not at.exception, at.exception
    assert at.error and "../../etc/passwd" in at.error[0].value
