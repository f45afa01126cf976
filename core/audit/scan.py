"""The whole-project pass: parse every file, index its classes, interpret every method once
(memoised summaries make callees run first) and collect findings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .java import Node, child, children, col_of, line_of, parse
from .model import AuditFinding, AuditRule, TraceStep
from .project import MethodInfo, Project, SourceFile
from .rules import RULE_FOR_CWE, STRUCTURAL_RULE_FOR_CWE, STRUCTURAL_RULE_IDS
from .statements import MethodRun
from .values import Origin, Val

_CONF = {("S", False): "high", ("S", True): "medium", ("R", False): "high", ("R", True): "medium"}


@dataclass(frozen=True)
class Summary:
    ret: Val
    # (parameter, cwe, sink file, sink line, sink column)
    param_sinks: frozenset[tuple[int, int, int, int, int]]


class Analyzer:
    """Holds the project index, summaries, field values and findings of one run."""

    def __init__(self, project: Project, *, weak_random: str = "flow") -> None:
        self.project = project
        self.weak_random = weak_random
        self.summaries: dict[tuple[int, int], Summary | None] = {}
        self.fields: dict[tuple[int, int, str], Val] = {}
        self.findings: dict[tuple[int, int, int], AuditFinding] = {}

    def summary(self, m: MethodInfo) -> Summary | None:
        if m.key in self.summaries:
            return self.summaries[m.key]
        self.summaries[m.key] = None  # in progress: a recursive call sees None
        run = MethodRun(self, m)
        ret = run.run()
        s = Summary(ret, frozenset(run.param_sinks))
        self.summaries[m.key] = s
        return s

    def run_all(self, file_indices: list[int] | None = None) -> None:
        idx = set(range(len(self.project.files)) if file_indices is None else file_indices)
        for classes in list(self.project.by_name.values()):
            for c in classes:
                if c.file_idx not in idx:
                    continue
                for ms in c.methods.values():
                    for m in ms:
                        self.summary(m)

    def report(
        self,
        fidx: int,
        node: Node,
        cwe: int,
        origin: Origin | None,
        via: tuple[int, int, int] | None,
        note: str = "",
    ) -> None:
        """A finding at ``node``; with ``via`` (the sink inside a called method) the same
        finding is also made at that sink, so the line to fix is listed with its entry."""
        line = line_of(node)
        if not self._open(fidx, line, cwe) and (via is None or not self._open(via[0], via[1], cwe)):
            return
        path = self.project.files[fidx].path
        trace: list[TraceStep] = []
        if origin is not None:
            what = "predictable random value" if origin[0] == "R" else "request data read"
            trace.append(TraceStep(self.project.files[origin[1]].path, origin[2], what))
        if via is not None:
            trace.append(TraceStep(path, line, "passed to a method"))
            trace.append(TraceStep(self.project.files[via[0]].path, via[1], "sink"))
        else:
            trace.append(TraceStep(path, line, note or "sink"))
        conf = "high" if origin is None else _CONF.get((origin[0], via is not None), "medium")
        if origin is None and note.startswith("algorithm") and not _literal_arg(node):
            conf = "medium"
        rule = RULE_FOR_CWE[cwe]
        self._put(fidx, line, col_of(node), cwe, rule, conf, trace)
        if via is not None and origin is not None:
            self._put(via[0], via[1], via[2], cwe, rule, conf, trace)

    def report_built(
        self,
        fidx: int,
        node: Node,
        cwe: int,
        m: MethodInfo,
        param: int,
        via: tuple[int, int, int] | None,
    ) -> None:
        """The structural tier: query text assembled from parameter ``param`` of ``m``."""
        line = line_of(node)
        if not self._open(fidx, line, cwe):
            return
        path = self.project.files[fidx].path
        pname = m.params[param][0]
        what = "constructor" if m.name == "<init>" else f"{m.name}()"
        trace = [TraceStep(path, _param_line(m, param), f"parameter '{pname}' of {what}")]
        if via is not None:
            trace.append(TraceStep(path, line, "assembled into a query passed to a method"))
            trace.append(TraceStep(self.project.files[via[0]].path, via[1], "sink"))
        else:
            trace.append(TraceStep(path, line, "query assembled from it reaches the sink"))
        rule = STRUCTURAL_RULE_FOR_CWE[cwe]
        self._put(fidx, line, col_of(node), cwe, rule, "low", trace)

    def _open(self, fidx: int, line: int, cwe: int) -> bool:
        """Whether a finding at this place may still be made (or a structural one replaced)."""
        old = self.findings.get((fidx, line, cwe))
        return old is None or old.rule in STRUCTURAL_RULE_IDS

    def _put(
        self,
        fidx: int,
        line: int,
        col: int,
        cwe: int,
        rule: AuditRule,
        conf: str,
        trace: list[TraceStep],
    ) -> None:
        key = (fidx, line, cwe)
        old = self.findings.get(key)
        if old is not None and (old.rule not in STRUCTURAL_RULE_IDS or rule.id == old.rule):
            return  # first finding wins, but request taint replaces a structural one
        sf = self.project.files[fidx]
        code = (
            sf.lines[line - 1].decode("utf-8", "replace").strip() if line <= len(sf.lines) else ""
        )
        self.findings[key] = AuditFinding(
            sf.path, line, col, cwe, rule.id, rule.title, conf, code, tuple(trace)
        )


def _param_line(m: MethodInfo, i: int) -> int:
    plist = child(m.node, "parameters")
    params = [
        p
        for p in (children(plist) if plist is not None else [])
        if p.type in ("formal_parameter", "spread_parameter")
    ]
    return line_of(params[i]) if i < len(params) else line_of(m.node)


def _literal_arg(node: Node) -> bool:
    args = node.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    return first is not None and first.type == "string_literal"


def load_file(root: Path, path: Path) -> SourceFile:
    data = path.read_bytes()
    return SourceFile(path.relative_to(root).as_posix(), data, parse(data), data.split(b"\n"))
