"""The held-out audit suite (tests/fixtures/audit_holdout): its answer key is consistent with its
code. Written without looking at the engine, it is scored by `benchmarks/bench_audit.py --suite
holdout`; this test checks the key only, never the engine's score."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import audit_suite
from zhixing.core.audit.java import child, parse, text, walk

ROOT = Path(__file__).resolve().parent / "fixtures" / "audit_holdout"
KEY = ROOT / audit_suite.KEY
CASES = audit_suite.load_cases(KEY)
CWES = {89, 78, 22, 79, 90, 643, 113, 601, 470, 15, 502, 501, 614, 798, 330, 315, 319, 327, 328}
# Words that would tell the answer: a whole word of a declared name, camelCase or snake_case.
TELLING = {"bad", "good", "safe", "unsafe", "secure", "insecure", "flaw", "flawed", "twin", "test"}
TELLING_PREFIXES = ("vuln", "flaw", "insecur", "unsaf")
DECLARATIONS = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "record_declaration",
        "enum_declaration",
        "method_declaration",
        "variable_declarator",
        "formal_parameter",
        "catch_formal_parameter",
        "enhanced_for_statement",
        "resource",
        "instanceof_expression",
    }
)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w.lower() for w in re.split(r"[\s_\-./$0-9]+", spaced) if w]


def _telling(name: str) -> bool:
    return any(w in TELLING or w.startswith(TELLING_PREFIXES) for w in _words(name))


def _declared_names(source: bytes) -> set[str]:
    root = parse(source).root_node
    names = {text(child(node, "name")) for node in walk(root, DECLARATIONS)}
    for lam in walk(root, frozenset({"lambda_expression"})):
        params = child(lam, "parameters")
        if params is not None:
            names |= {text(n) for n in walk(params, frozenset({"identifier"}))}
    return names - {""}


def test_the_key_has_the_suite_format() -> None:
    with KEY.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == ["file", "method", "cwe", "vulnerable", "source", "flow"]
        rows = list(reader)
    assert 100 <= len(rows) <= 140
    assert {r["vulnerable"] for r in rows} == {"true", "false"}
    for r in rows:
        assert r["source"] in audit_suite.SOURCES, r
        assert r["flow"] in audit_suite.FLOWS, r


def test_every_case_names_a_method_declared_once_in_its_file() -> None:
    spans = audit_suite.suite_spans(ROOT, CASES)
    for case in CASES:
        assert (ROOT / case.file).is_file(), case.file
        declared = Counter(name for name, _, _ in spans[case.file])
        assert declared[case.method] == 1, (case.file, case.method, declared[case.method])


def test_cases_are_unique_and_cover_every_cwe_with_flawed_and_safe_cases() -> None:
    keys = Counter((c.file, c.method, audit_suite.norm(c.cwe)) for c in CASES)
    assert [k for k, n in keys.items() if n > 1] == []
    by_cwe = Counter((audit_suite.norm(c.cwe), c.vulnerable) for c in CASES)
    assert {audit_suite.norm(c.cwe) for c in CASES} == CWES
    for cwe in CWES:
        assert by_cwe[cwe, True] >= 2, cwe
        assert by_cwe[cwe, False] >= 2, cwe


def test_sources_and_flows_are_varied() -> None:
    assert {c.source for c in CASES} == set(audit_suite.SOURCES)
    assert {c.flow for c in CASES} == set(audit_suite.FLOWS)
    for attr in ("source", "flow"):  # each kind has flawed cases and safe look-alikes
        for kind in {getattr(c, attr) for c in CASES}:
            assert {c.vulnerable for c in CASES if getattr(c, attr) == kind} == {True, False}


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.java")), ids=lambda p: p.name)
def test_no_name_tells_the_answer(path: Path) -> None:
    assert not _telling(path.stem), path
    telling = sorted(n for n in _declared_names(path.read_bytes()) if _telling(n))
    assert telling == [], path


def test_the_name_check_sees_camel_and_snake_case() -> None:
    assert _telling("loadUnsafe") and _telling("VULN_TABLE") and _telling("goodCase")
    assert not _telling("priorityBadge") and not _telling("requestedAt") and not _telling("digest")
