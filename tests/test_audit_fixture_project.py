"""The audit on a small Spring-style shop with planted flaws and safe look-alikes.

Each sink line of the fixture carries a marker comment: ``VULN:<cwe>`` must be reported with
that CWE, ``SAFE:<cwe>`` must not be.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zhixing.core.audit import AuditResult, audit_tree

SHOP = Path(__file__).parent / "fixtures" / "audit" / "shop"
MARK = re.compile(r"(VULN|SAFE):(\d+)")


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return audit_tree(SHOP)


def _markers(kind: str) -> set[tuple[str, int, int]]:
    out = set()
    for path in SHOP.rglob("*.java"):
        rel = path.relative_to(SHOP).as_posix()
        for no, line in enumerate(path.read_text().splitlines(), 1):
            for k, cwe in MARK.findall(line):
                if k == kind:
                    out.add((rel, no, int(cwe)))
    return out


def _reported(result: AuditResult) -> set[tuple[str, int, int]]:
    return {(f.file, f.line, f.cwe) for f in result.findings}


def _by_file(result: AuditResult, name: str) -> dict[int, set[int]]:
    lines: dict[int, set[int]] = {}
    for f in result.findings:
        if f.file.endswith("/" + name):
            lines.setdefault(f.line, set()).add(f.cwe)
    return lines


def test_every_file_of_the_fixture_project_parses_without_errors(result: AuditResult) -> None:
    assert result.files_scanned == len(list(SHOP.rglob("*.java")))
    assert result.parse_errors == []


def test_every_planted_flaw_is_reported_with_its_cwe(result: AuditResult) -> None:
    planted = _markers("VULN")
    assert len(planted) >= 20
    assert planted - _reported(result) == set()


def test_no_safe_look_alike_is_reported(result: AuditResult) -> None:
    safe = _markers("SAFE")
    assert len(safe) >= 15
    assert safe & _reported(result) == set()


def test_a_bound_prepared_statement_is_safe_but_a_concatenated_query_is_not(
    result: AuditResult,
) -> None:
    lines = _by_file(result, "OrderController.java")
    src = (SHOP / "src/main/java/com/example/shop/OrderController.java").read_text().splitlines()
    concat = next(i for i, x in enumerate(src, 1) if "executeQuery(q.toString())" in x)
    prepared = next(i for i, x in enumerate(src, 1) if 'prepareStatement("SELECT' in x)
    assert 89 in lines[concat]
    assert 89 not in lines.get(prepared, set())


def test_a_flaw_reached_through_helpers_in_two_other_classes_is_reported_at_the_call(
    result: AuditResult,
) -> None:
    hits = [f for f in result.findings if f.file.endswith("ReportController.java") and f.cwe == 78]
    via = [f for f in hits if "render(TextUtil.tidy" in f.code]
    assert len(via) == 1
    steps = [s.file.rsplit("/", 1)[-1] for s in via[0].trace]
    assert steps[-1] == "ReportService.java"  # the trace ends at the real sink
    assert via[0].confidence == "medium"


def test_findings_carry_rule_title_column_code_and_a_trace(result: AuditResult) -> None:
    f = next(x for x in result.findings if x.cwe == 501)
    assert f.rule == "zhixing.trustbound.session-write"
    assert f.title and f.column > 1 and "setAttribute" in f.code
    assert f.trace[0].note == "request data read" and f.trace[-1].line == f.line
    assert f.clause == ""


def test_progress_is_reported_once_per_file() -> None:
    seen: list[tuple[int, int]] = []
    audit_tree(SHOP, progress=lambda done, total: seen.append((done, total)))
    total = len(list(SHOP.rglob("*.java")))
    assert seen[-1] == (total, total) and len(seen) == total
