"""`zhixing run` against a temp home (offline), in this process (tests/command.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.command import zx

ROOT = Path(__file__).resolve().parents[1]

TASK = "对这个 Java SpringBoot 项目进行代码审计，参考 @kb 中的规范"


def test_run_prints_the_json_shape_and_traces_live_on_stderr(tmp_path: Path) -> None:
    home = tmp_path / "home"
    zx(home, "kb", "create", "kb")
    zx(home, "add", "kb", str(ROOT / "samples" / "java-secure-coding-guideline.md"))
    shop = str(ROOT / "samples" / "springboot-shop")
    out = zx(home, "run", "kb", TASK, "--workspace", shop, "--json")
    result = json.loads(out.stdout)
    shape = {"task", "plan_before", "plan_after", "report", "findings", "workspace", "warnings"}
    assert set(result) == shape
    assert result["task"] == TASK
    assert result["plan_before"] != [s["title"] for s in result["plan_after"]]
    assert len(result["findings"]) == 7
    finding = result["findings"][0]
    assert {"title", "severity", "file", "line", "code", "knowledge"} <= set(finding)
    assert finding["knowledge"][0]["document"] == "java-secure-coding-guideline.md"
    assert "[subtask 1] #1 grep" in out.stderr and "revised plan:" in out.stderr

    markdown = zx(home, "run", "--all", TASK, "--workspace", shop)
    assert markdown.stdout.startswith("# 任务报告") and "## 发现" in markdown.stdout  # its language


def test_run_fails_with_one_sentence_for_a_missing_workspace_or_kb(tmp_path: Path) -> None:
    home = tmp_path / "home"
    zx(home, "kb", "create", "kb")
    missing = zx(home, "run", "kb", "audit", "--workspace", "no/such/dir", check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    unknown = zx(home, "run", "nope", "audit", check=False)
    assert unknown.returncode == 1 and unknown.stderr.startswith("zhixing: ")
