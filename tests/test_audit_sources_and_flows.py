"""Sources beyond the servlet request, the flows a real codebase has, and the taint sinks added
with them (issue 36), on fixtures written for them: tests/fixtures/audit/kinds.

Each sink line carries a marker: ``VULN:<cwe> [source kind]`` must be reported with that CWE
(and, when named, that source kind), ``SAFE:<cwe>`` must not be.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zhixing.core.audit import AuditResult, audit_tree
from zhixing.core.audit.untrusted import KINDS

KINDS_ROOT = Path(__file__).parent / "fixtures" / "audit" / "kinds"
_MARK = re.compile(r"//\s*(VULN|SAFE):(\d+)(?:\s+([a-z-]+))?")


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return audit_tree(KINDS_ROOT)


def _marks() -> list[tuple[str, str, int, int, str]]:
    """(marker, file, line, cwe, label) for every marker of the fixtures."""
    out = []
    for p in sorted(KINDS_ROOT.glob("*.java")):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            for m in _MARK.finditer(line):
                out.append((m.group(1), p.name, i, int(m.group(2)), m.group(3) or ""))
    return out


def test_every_flaw_is_reported_and_no_safe_twin_is(result: AuditResult) -> None:
    found = {(f.file, f.line, f.cwe) for f in result.findings}
    marks = _marks()
    missed = [m for m in marks if m[0] == "VULN" and m[1:4] not in found]
    false = [m for m in marks if m[0] == "SAFE" and m[1:4] in found]
    assert (missed, false) == ([], [])


def test_each_source_kind_is_found_and_named_in_the_finding(result: AuditResult) -> None:
    by_place = {(f.file, f.line, f.cwe): f for f in result.findings}
    named = {}
    for mark, file, line, cwe, label in _marks():
        if mark == "VULN" and label in KINDS:
            f = by_place[(file, line, cwe)]
            assert f.source == label, (file, line)
            assert KINDS[label].read in [s.note for s in f.trace]
            named[label] = f.confidence
    assert set(named) >= set(KINDS) - {"request", "deserialization"}
    # Data an attacker needs local access to control is reported one step lower.
    assert named["environment"] == named["command-line"] == "medium"
    assert named["network"] == named["database"] == "high"


def test_a_round_trip_through_serialization_keeps_the_taint_but_is_no_deserialization_flaw(
    result: AuditResult,
) -> None:
    (f,) = [
        x for x in result.findings if x.file == "Flows.java" and x.cwe == 78 and "back" in x.code
    ]
    assert f.source == "deserialization"
    deser = [x.code for x in result.findings if x.cwe == 502 and x.file == "Flows.java"]
    assert deser == ["Object o = in.readObject(); // VULN:502"]


def test_each_new_weakness_has_a_flawed_and_a_safe_case() -> None:
    marks = _marks()
    for cwe in (113, 601, 79, 470, 15, 502, 22, 78, 89, 90, 643, 338, 319, 315, 614, 326, 798):
        assert any(m[0] == "VULN" and m[3] == cwe for m in marks), cwe
        assert any(m[0] == "SAFE" and m[3] == cwe for m in marks), cwe


def _audit(tmp_path: Path, src: str) -> list[tuple[int, str]]:
    (tmp_path / "Q.java").write_text(src)
    return [(f.line, f.rule) for f in audit_tree(tmp_path).findings]


def test_the_structural_tier_needs_a_caller_that_can_pass_data(tmp_path: Path) -> None:
    helper = (
        "class Q {\n"
        "  void drop(java.sql.Statement st, String table) throws Exception {\n"
        '    st.execute("DROP TABLE " + table);\n'
        "  }\n"
    )
    # No caller in the tree: an entry point, reported at low confidence.
    assert _audit(tmp_path, helper + "}\n") == [(3, "zhixing.sqli.concatenated-query")]
    # Every caller passes a constant: nothing to report.
    only_constants = '  void reset(java.sql.Statement st) throws Exception { drop(st, "cache"); }\n'
    assert _audit(tmp_path, helper + only_constants + "}\n") == []
    # A caller passes its own parameter: the tier holds again.
    relayed = "  void purge(java.sql.Statement st, String t) throws Exception { drop(st, t); }\n"
    assert _audit(tmp_path, helper + only_constants + relayed + "}\n") == [
        (3, "zhixing.sqli.concatenated-query")
    ]


def test_a_field_read_before_the_method_that_writes_it_is_interpreted(tmp_path: Path) -> None:
    src = (
        "class Q {\n"
        "  private String name;\n"
        "  private boolean armed = false;\n"
        "  void use() throws Exception { if (armed) { Runtime.getRuntime().exec(name); } }\n"
        '  void load() { name = System.getenv("N"); armed = true; }\n'
        "}\n"
    )
    assert _audit(tmp_path, src) == [(4, "zhixing.cmdi.tainted-command")]
    # A flag that is never set keeps its branch dead.
    assert _audit(tmp_path, src.replace("armed = true;", "")) == []


def test_code_nested_deeper_than_the_stack_is_skipped_not_fatal(tmp_path: Path) -> None:
    # Generated code: a concatenation of thousands of terms, a builder chain as long.
    terms = " + ".join(['"a"'] * 3000)
    chain = "".join(['.append("a")'] * 3000)
    (tmp_path / "Gen.java").write_text(
        "class Gen {\n"
        f"  String text(String x) {{ return {terms} + x; }}\n"
        f"  String built() {{ return new StringBuilder(){chain}.toString(); }}\n"
        "  void run(String cmd) throws Exception {\n"
        '    Runtime.getRuntime().exec(System.getenv("CMD"));\n'
        "  }\n"
        "}\n"
    )
    result = audit_tree(tmp_path)
    assert result.too_deep == ["Gen.java"]
    # The file's other methods are still audited.
    assert [(f.line, f.cwe) for f in result.findings] == [(5, 78)]
