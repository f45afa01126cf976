"""Path containment guards and the structural tier for queries assembled from parameters.

The Java lives in the shop fixture (``GuardedFileController``, ``CatalogRepository``,
``CatalogController``); its ``VULN``/``SAFE`` markers are checked by the fixture-project tests,
these tests check how the findings read: rule, confidence and trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zhixing.core.audit import BUILTIN_RULES, AuditFinding, AuditResult, audit_tree

SHOP = Path(__file__).parent / "fixtures" / "audit" / "shop"
PKG = SHOP / "src/main/java/com/example/shop"


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return audit_tree(SHOP)


def _line(name: str, needle: str) -> int:
    lines = (PKG / name).read_text().splitlines()
    return next(i for i, x in enumerate(lines, 1) if needle in x)


def _at(result: AuditResult, name: str, line: int) -> list[AuditFinding]:
    return [f for f in result.findings if f.file.endswith("/" + name) and f.line == line]


def _method_lines(name: str, method: str) -> range:
    lines = (PKG / name).read_text().splitlines()
    start = next(i for i, x in enumerate(lines, 1) if f" {method}(" in x)
    end = next(i for i in range(start + 1, len(lines) + 1) if lines[i - 1].startswith("    }"))
    return range(start, end + 1)


@pytest.mark.parametrize("method", ["rejectOutside", "onlyInside", "canonical"])
def test_a_normalised_path_checked_with_starts_with_is_clean_after_and_inside_the_guard(
    result: AuditResult, method: str
) -> None:
    span = _method_lines("GuardedFileController.java", method)
    hits = [f for ln in span for f in _at(result, "GuardedFileController.java", ln)]
    assert hits == []


@pytest.mark.parametrize(
    "method", ["notNormalised", "normalisedButUnchecked", "dotsOnly", "userBase"]
)
def test_a_path_without_normalising_or_without_a_trusted_base_check_is_still_reported(
    result: AuditResult, method: str
) -> None:
    span = _method_lines("GuardedFileController.java", method)
    hits = [f for ln in span for f in _at(result, "GuardedFileController.java", ln)]
    assert hits and all(f.cwe == 22 for f in hits)
    # The normalised path is judged where it is read, not where it is built.
    assert all("readAllBytes" in f.code or ".resolve(name);" in f.code for f in hits)


def test_a_query_assembled_from_a_parameter_is_a_low_confidence_finding_at_the_sink(
    result: AuditResult,
) -> None:
    line = _line("CatalogRepository.java", 'execute("DELETE FROM')
    (f,) = _at(result, "CatalogRepository.java", line)
    assert (f.cwe, f.rule, f.confidence) == (89, "zhixing.sqli.concatenated-query", "low")
    assert f.title == "SQL built by concatenating a method parameter"
    assert f.trace[0].note == "parameter 'category' of dropCategory()"
    assert f.trace[0].line == _line("CatalogRepository.java", "void dropCategory(")
    assert f.trace[-1].line == line


@pytest.mark.parametrize(
    ("needle", "rule"),
    [
        ("executeQuery(sb.toString())", "zhixing.sqli.concatenated-query"),
        ('exec("ping -c 1 " + host)', "zhixing.cmdi.concatenated-command"),
        ("xp.evaluate(", "zhixing.xpathi.concatenated-expression"),
        ("ctx.search(", "zhixing.ldapi.concatenated-filter"),
    ],
)
def test_every_query_language_has_its_structural_rule(
    result: AuditResult, needle: str, rule: str
) -> None:
    hits = _at(result, "CatalogRepository.java", _line("CatalogRepository.java", needle))
    assert [(f.rule, f.confidence) for f in hits] == [(rule, "low")]


def test_bound_constant_and_numeric_parts_never_make_a_structural_finding(
    result: AuditResult,
) -> None:
    for method in ("byId", "page", "run", "all"):
        span = _method_lines("CatalogRepository.java", method)
        assert [f for ln in span for f in _at(result, "CatalogRepository.java", ln)] == []


def test_request_data_reaching_a_helper_sink_is_reported_once_at_the_sink_and_at_the_call(
    result: AuditResult,
) -> None:
    sink = _line("CatalogRepository.java", "return st.executeQuery(sql);")
    call = _line("CatalogController.java", "repo.byName(q)")
    (at_sink,) = _at(result, "CatalogRepository.java", sink)  # the taint finding replaced
    (at_call,) = _at(result, "CatalogController.java", call)  # the structural one
    for f in (at_sink, at_call):
        assert (f.rule, f.confidence) == ("zhixing.sqli.tainted-query", "medium")
        steps = [(s.file.rsplit("/", 1)[-1], s.line, s.note) for s in f.trace]
        assert steps[0][0] == "CatalogController.java" and steps[0][2] == "request data read"
        assert steps[1:] == [
            ("CatalogController.java", call, "passed to a method"),
            ("CatalogRepository.java", sink, "sink"),
        ]


def test_the_structural_rules_have_their_own_ids_beside_the_taint_rules() -> None:
    ids = {r.id: r.cwe for r in BUILTIN_RULES}
    for cwe, taint, built in [
        (89, "zhixing.sqli.tainted-query", "zhixing.sqli.concatenated-query"),
        (78, "zhixing.cmdi.tainted-command", "zhixing.cmdi.concatenated-command"),
        (90, "zhixing.ldapi.tainted-filter", "zhixing.ldapi.concatenated-filter"),
        (643, "zhixing.xpathi.tainted-expression", "zhixing.xpathi.concatenated-expression"),
    ]:
        assert ids[taint] == cwe and ids[built] == cwe
    assert [r.id for r in BUILTIN_RULES] == sorted(r.id for r in BUILTIN_RULES)


def test_a_helper_returning_assembled_text_still_counts_as_assembled(tmp_path: Path) -> None:
    (tmp_path / "Q.java").write_text(
        "class Q {\n"
        '  private static String where(String k) { return " WHERE k = \'" + k + "\'"; }\n'
        "  void drop(java.sql.Statement st, String key) throws Exception {\n"
        '    st.execute("DELETE FROM t" + where(key));\n'
        "  }\n"
        "  void keep(java.sql.Statement st, String sql) throws Exception {\n"
        "    st.execute(sql.trim());\n"
        "  }\n"
        "}\n"
    )
    found = [(f.line, f.rule) for f in audit_tree(tmp_path).findings]
    assert found == [(4, "zhixing.sqli.concatenated-query")]
