"""The state of one audit run: the project index, method summaries, field values and findings.

:class:`Analyzer` is what every :class:`.interpreter.MethodRun` of a run shares. It decides how
a finding is recorded (confidence, trace, which of two findings at one place wins) but
interprets nothing itself, so the interpreter depends on it and not the other way round.
``load_file`` reads and parses one source file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from .credentials import Hit
from .java import Node, child, children, col_of, line_of, parse
from .model import AuditFinding, AuditRule, TraceStep
from .project import ClassInfo, MethodInfo, Project, SourceFile
from .rules import RULE_FOR_CWE, STRUCTURAL_RULE_FOR_CWE, STRUCTURAL_RULE_IDS
from .summary import Site, Summary
from .untrusted import KINDS
from .values import CLEAN, RANDOM, Env, Origin, Val, join, without_params


def _confidence(origin: Origin, via: bool) -> str:
    """A taint finding's confidence: high at the sink itself and medium through a called
    method's summary; one step lower for outside data an attacker needs local access to
    control (the environment, a setting, the console, the command line)."""
    local = origin.kind in KINDS and KINDS[origin.kind].local
    return "medium" if via or local else "high"


def _read(origin: Origin) -> str:
    if origin.kind == RANDOM:
        return "predictable random value"
    info = KINDS.get(origin.kind)
    return info.read if info is not None else "outside data read"


class Analyzer:
    """Holds the project index, summaries, field values and findings of one run."""

    def __init__(self, project: Project, *, weak_random: str = "flow") -> None:
        self.project = project
        self.weak_random = weak_random
        # MethodInfo.key -> its summary; None while the method is being interpreted.
        self.summaries: dict[tuple[int, int], Summary | None] = {}
        self.fields: dict[tuple[int, int, str], Val] = {}
        self.findings: dict[tuple[int, int, int], AuditFinding] = {}
        # Fields read so far, and whether one of them changed after it was read: then the
        # methods that read it run again (audit_tree), so a write in one method reaches a read
        # in another whatever the order they were summarised in.
        self.read: set[tuple[int, int, str]] = set()
        self.too_deep: set[str] = set()  # files with a method nested too deep to follow
        self.stale = False
        self._classes = {(c.file_idx, c.node.start_byte): c for c in project.classes_all()}
        # The structural tier's evidence: which method parameter each such finding rests on,
        # the methods some call site of the tree runs, and the parameters a call site passes
        # something other than a clean value (outside data, or its caller's own parameter).
        self._structural: dict[tuple[int, int, int], tuple[tuple[int, int], int]] = {}
        self.called: set[tuple[int, int]] = set()
        self.passed: set[tuple[tuple[int, int], int]] = set()

    def results(self) -> list[AuditFinding]:
        """The findings, in file order. A structural finding stands only where a caller can
        pass it data: its method has no call site in the tree (an entry point), or one that
        passes the parameter something not clean."""
        out = []
        for key, f in self.findings.items():
            rests_on = self._structural.get(key)
            if rests_on is not None and f.rule in STRUCTURAL_RULE_IDS:
                method, param = rests_on
                if method in self.called and (method, param) not in self.passed:
                    continue
            out.append(f)
        return sorted(out, key=lambda f: (f.file, f.line, f.cwe))

    def owner(self, key: tuple[int, int]) -> ClassInfo:
        """The class declared at ``key`` (its file and start byte)."""
        return self._classes[key]

    def field(self, owner: ClassInfo, name: str, evaluate: Callable[[Node, Env], Val]) -> Val:
        """Field ``name`` of ``owner``: one value for the whole run, shared by every method. Its
        initialiser is evaluated (by ``evaluate``, the reading method's run) on the first read;
        writes join into it."""
        key = (owner.file_idx, owner.node.start_byte, name)
        self.read.add(key)
        if key not in self.fields:
            self.fields[key] = Val(typ=owner.fields.get(name))  # guards recursion
            init = owner.field_inits.get(name)
            if init is not None:
                self.fields[key] = evaluate(init, {}).with_type(owner.fields.get(name))
        return self.fields[key]

    def static_field(
        self, cls_name: str, name: str, near: ClassInfo, evaluate: Callable[[Node, Env], Val]
    ) -> Val:
        """Field ``name`` of the class ``cls_name`` (``Config.KEY``) as seen from ``near``."""
        for c in self.project.classes(cls_name, near):
            if name in c.fields:
                return self.field(c, name, evaluate)
        return CLEAN

    def write_field(
        self, owner: ClassInfo, name: str, v: Val, evaluate: Callable[[Node, Env], Val]
    ) -> None:
        """Field ``name`` of ``owner`` may now hold ``v`` too, less its parameter origins: a
        field outlives the call."""
        key = (owner.file_idx, owner.node.start_byte, name)
        was_read = key in self.read
        old = self.field(owner, name, evaluate)
        new = join(old, without_params(v)).with_type(owner.fields.get(name))
        if new != old:
            self.fields[key] = new
            self.stale = self.stale or was_read

    def report(
        self,
        fidx: int,
        node: Node,
        cwe: int,
        origin: Origin | None,
        via: Site | None,
        note: str = "",
        confidence: str | None = None,
    ) -> None:
        """A finding at ``node``; with ``via`` (the sink inside a called method) the same
        finding is also made at that sink, so the line to fix is listed with its entry.
        ``confidence``, when given, is the checking rule's own."""
        line = line_of(node)
        if not self._open(fidx, line, cwe) and (
            via is None or not self._open(via.file, via.line, cwe)
        ):
            return
        path = self.project.files[fidx].path
        trace: list[TraceStep] = []
        if origin is not None:
            trace.append(
                TraceStep(self.project.files[origin.file].path, origin.line, _read(origin))
            )
        if via is not None:
            trace.append(TraceStep(path, line, "passed to a method"))
            trace.append(TraceStep(self.project.files[via.file].path, via.line, "sink"))
        else:
            trace.append(TraceStep(path, line, note or "sink"))
        conf = "high" if origin is None else _confidence(origin, via is not None)
        if origin is None and note.startswith("algorithm") and not _literal_arg(node):
            conf = "medium"
        conf = confidence or conf
        rule = RULE_FOR_CWE[cwe]
        kind = origin.kind if origin is not None and origin.kind in KINDS else ""
        self._put(fidx, line, col_of(node), cwe, rule, conf, trace, kind)
        if via is not None and origin is not None:
            self._put(via.file, via.line, via.column, cwe, rule, conf, trace, kind)

    def record(self, fidx: int, node: Node, hits: Iterable[Hit]) -> None:
        """Record the findings of the secret checks (:mod:`.credentials`, :mod:`.exposure`)."""
        for h in hits:
            self.report(fidx, node, h.cwe, h.origin, None, h.note, h.confidence)

    def report_built(
        self,
        fidx: int,
        node: Node,
        cwe: int,
        m: MethodInfo,
        param: int,
        via: Site | None,
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
            trace.append(TraceStep(self.project.files[via.file].path, via.line, "sink"))
        else:
            trace.append(TraceStep(path, line, "query assembled from it reaches the sink"))
        rule = STRUCTURAL_RULE_FOR_CWE[cwe]
        self._put(fidx, line, col_of(node), cwe, rule, "low", trace)
        self._structural.setdefault((fidx, line, cwe), (m.key, param))

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
        source: str = "",
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
            sf.path, line, col, cwe, rule.id, rule.title, conf, code, tuple(trace), source=source
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
    """Read and parse one Java file; its path is kept relative to ``root``."""
    data = path.read_bytes()
    return SourceFile(path.relative_to(root).as_posix(), data, parse(data), data.split(b"\n"))
