"""Static security audit of Java source trees: taint/data-flow and configuration rules.

``audit_tree`` parses every ``*.java`` file under a root with tree-sitter, builds a project
index, interprets each method once (callee summaries first) and returns the findings of the
built-in rule pack. ``to_sarif`` and ``to_csv`` write them out.

The modules, each importing only those named before it: ``java`` (the tree-sitter adapter),
``java_api``, ``untrusted`` and ``judgements`` (the engine's knowledge of the Java library, the
catalog of sources, and judgements on constant arguments, as data), ``model`` and ``rules``
(results, the rule pack), ``fold``, ``values``, ``project`` (the class index); pure helpers:
``guards``, ``operators``, ``checks``, ``summary``, ``syntax``, ``library``, ``credentials``
(hard-coded secrets, predictable random secrets), ``exposure`` (secrets in cookies and on
plain channels); ``scan`` (the state one run shares, and how a finding is recorded); functions
over a method run: ``closures`` (lambdas, method references, anonymous classes, wrapping
streams), ``objects`` (fields and object slots), ``control`` (loops, switches, try) and
``inputs`` (where outside data enters at a call); ``interpreter`` (``MethodRun``, the one class
that walks a method body); ``writers`` (SARIF, CSV). tests/test_audit_imports.py keeps the
imports free of cycles.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .exposure import file_hits
from .interpreter import method_summary
from .model import AuditFinding, AuditResult, AuditRule, TraceStep
from .project import Project
from .rules import BUILTIN_RULES
from .scan import Analyzer, load_file
from .writers import csv_text, to_csv, to_sarif

__all__ = [
    "BUILTIN_RULES",
    "AuditFinding",
    "AuditResult",
    "AuditRule",
    "TraceStep",
    "audit_tree",
    "csv_text",
    "to_csv",
    "to_sarif",
]


# Passes over the whole tree at most: a pass runs again when a field changed after some method
# read it (fields only grow, so this ends; three passes carry a value through two fields).
MAX_PASSES = 3


def audit_tree(
    root: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    weak_random: str = "flow",
) -> AuditResult:
    """Audit every ``*.java`` file under ``root``, in this one process: it audits ~1,400 files
    in a few seconds, less than a process pool would spend starting and re-parsing every file
    for the cross-file summaries.

    ``progress(done, total)`` is called as files are parsed. ``weak_random``: "any" reports
    every java.util.Random / Math.random use, "flow" only those whose value reaches a cookie,
    the session or the response.
    """
    start = time.perf_counter()
    root = Path(root)
    paths = sorted(p for p in root.rglob("*.java") if p.is_file())
    project = Project()
    errors: list[str] = []
    for i, p in enumerate(paths, 1):
        sf = load_file(root, p)
        if sf.tree.root_node.has_error:
            errors.append(sf.path)
        project.add_file(sf)
        if progress is not None:
            progress(i, len(paths))
    an = Analyzer(project, weak_random=weak_random)
    for fidx, sf in enumerate(project.files):  # what the syntax alone shows: hard-coded secrets
        for node, hit in file_hits(sf.tree.root_node):
            an.record(fidx, node, [hit])
    for _ in range(MAX_PASSES):
        an.summaries.clear()
        an.stale = False
        for m in project.methods():
            method_summary(an, m)
        if not an.stale:
            break
    findings = an.results()
    seconds = time.perf_counter() - start
    return AuditResult(
        str(root), findings, len(paths), errors, seconds, too_deep=sorted(an.too_deep)
    )
