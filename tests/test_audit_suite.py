"""Our own audit suite (tests/fixtures/audit_suite): its answer key agrees with its sources, and
the scorer of benchmarks/audit_suite.py computes the right figures. The engine's score on the
suite is not asserted here: `benchmarks/bench_audit.py --suite own` measures it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.audit_suite import (
    FLOWS,
    KEY,
    SOURCES,
    SUITE,
    Case,
    flag,
    load_cases,
    method_spans,
    norm,
    score,
)
from zhixing.core.audit.java import child, parse, text, walk

CWES = {15, 22, 78, 79, 89, 90, 113, 259, 315, 319, 321, 327, 328, 330, 470, 501, 502, 601, 614}
CWES |= {643, 798}
DECLARATIONS = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "record_declaration",
        "method_declaration",
        "variable_declarator",
        "formal_parameter",
        "catch_formal_parameter",
    }
)
TELLING = re.compile(r"bad|good|safe|vulnerab|twin|flaw|taint|sanitiz|attack|evil", re.I)


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


def test_every_case_names_a_method_declared_once_in_an_existing_file(cases: list[Case]) -> None:
    assert 120 <= len(cases) <= 200
    assert len({(c.file, c.method) for c in cases}) == len(cases), "one case per method"
    problems = []
    for f in sorted({c.file for c in cases}):
        path = SUITE / f
        assert path.is_file(), f
        tree = parse(path.read_bytes())
        assert not tree.root_node.has_error, f"{f} does not parse"
        names = Counter(name for name, _, _ in method_spans(path.read_bytes()))
        problems += [
            f"{f}:{c.method} declared {names[c.method]} times"
            for c in cases
            if c.file == f and names[c.method] != 1
        ]
    assert not problems


def test_labels_come_from_the_allowed_sets(cases: list[Case]) -> None:
    assert {c.source for c in cases} <= set(SOURCES)
    assert {c.flow for c in cases} <= set(FLOWS)
    assert {c.cwe for c in cases} <= CWES
    header = (SUITE / KEY).read_text().splitlines()[0]
    assert header == "file,method,cwe,vulnerable,source,flow"
    values = {line.split(",")[3] for line in (SUITE / KEY).read_text().splitlines()[1:]}
    assert values == {"true", "false"}


def test_every_weakness_has_flawed_cases_and_safe_look_alikes(cases: list[Case]) -> None:
    count = Counter((norm(c.cwe), c.vulnerable) for c in cases)
    thin = [w for w in {norm(c) for c in CWES} if count[w, True] < 2 or count[w, False] < 2]
    assert not thin, f"fewer than 2 flawed or 2 safe cases: {sorted(thin)}"
    for kind, attr in ((SOURCES, "source"), (FLOWS, "flow")):
        used = Counter((getattr(c, attr), c.vulnerable) for c in cases)
        assert all(used[k, True] >= 2 and used[k, False] >= 2 for k in kind), attr


def test_no_name_gives_the_answer_away(cases: list[Case]) -> None:
    assert not [c for c in cases if TELLING.search(c.file) or TELLING.search(c.method)]
    telling = set()
    for path in SUITE.rglob("*.java"):
        for node in walk(parse(path.read_bytes()).root_node, DECLARATIONS):
            name = text(child(node, "name"))
            if TELLING.search(name):
                telling.add(f"{path.name}: {name}")
    assert not telling, "names declared in the suite"


JAVA = """class A {
  void a(String p) {
    run(p);
  }
  void b() {
    run("x");
  }
  void c() {
    key("k");
  }
  void d() {
    key(System.getenv("K"));
  }
  A() {
    new Thread(new Runnable() {
      public void run() {
        exec("x");
      }
    });
  }
}
"""


def test_the_scorer_counts_findings_in_the_case_methods_by_cwe_group(tmp_path: Path) -> None:
    spans = {"A.java": method_spans(JAVA.encode())}
    assert ("a", 2, 4) in spans["A.java"] and ("<init>", 14, 20) in spans["A.java"]
    cases = [
        Case("A.java", "a", 89, True, "request", "local"),
        Case("A.java", "b", 89, False, "request", "local"),
        Case("A.java", "c", 321, True, "none", "none"),
        Case("A.java", "d", 798, False, "none", "none"),
        Case("A.java", "<init>", 78, True, "environment", "inner-class"),
        Case("A.java", "a", 22, True, "file", "call"),
    ]
    findings = [
        ("A.java", 3, 89),  # in a: TP
        ("A.java", 6, 78),  # in b, another CWE: b stays a TN
        ("A.java", 9, 798),  # in c: 798 stands for 321, a TP
        ("A.java", 12, 259),  # in d: 259 counts as 798, an FP
        ("A.java", 17, 78),  # inside the anonymous class of the constructor: TP
        ("A.java", 1, 22),  # on the class line, in no method
        ("B.java", 3, 89),  # another file
    ]
    flagged, elsewhere = flag(cases, findings, spans)
    assert [flagged[c] for c in cases] == [True, False, True, True, True, False]
    assert elsewhere == 3
    res = score(cases, flagged)
    assert res["cwes"]["89"] == {
        "tp": 1, "fn": 0, "fp": 0, "tn": 1, "tpr": 1.0, "fpr": 0.0, "score": 1.0
    }  # fmt: skip
    assert res["cwes"]["798"] == {
        "tp": 1, "fn": 0, "fp": 1, "tn": 0, "tpr": 1.0, "fpr": 1.0, "score": 0.0
    }  # fmt: skip
    assert res["cwes"]["22"]["fn"] == 1 and res["cwes"]["22"]["score"] == 0.0
    assert res["cwes"]["78"]["score"] == 1.0
    assert set(res["cwes"]) == {"22", "78", "89", "798"}
    o = res["overall"]
    assert o["score"] == pytest.approx((0 + 1 + 1 + 0) / 4)
    assert o["tpr"] == pytest.approx(3 / 4) and o["fpr"] == pytest.approx(1 / 4)
    assert o["pooled_tpr"] == pytest.approx(3 / 4) and o["pooled_fpr"] == pytest.approx(1 / 2)
    assert o["cases"] == 6
    assert res["sources"]["none"] == {
        "flawed": 1, "safe": 1, "tp": 1, "fp": 1, "tpr": 1.0, "fpr": 1.0
    }  # fmt: skip
    assert res["sources"]["request"]["tpr"] == 1.0 and res["sources"]["request"]["fpr"] == 0.0
    assert res["sources"]["file"]["tpr"] == 0.0
    assert res["flows"]["inner-class"]["tp"] == 1
    assert res["flows"]["lambda"] == {
        "flawed": 0,
        "safe": 0,
        "tp": 0,
        "fp": 0,
        "tpr": 0.0,
        "fpr": 0.0,
    }
