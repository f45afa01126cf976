"""The per-method interpreter: one :class:`MethodRun` walks one method body once.

Flow-sensitive, with branches whose condition folds to a constant dropped. Each parameter stands
for itself (:meth:`.values.Origin.param`), so what reaches the method's return and its sinks
becomes its :class:`.summary.Summary`; request data that reaches a sink becomes a finding. What
needs the run's state is here; the pure rest is in :mod:`.operators`, :mod:`.library`,
:mod:`.summary`, :mod:`.checks`, :mod:`.guards` and :mod:`.syntax`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial, reduce

from . import checks, credentials, guards, library
from . import java_api as api
from . import operators as ops
from . import syntax as syn
from .java import Node, child, children, col_of, line_of, text
from .project import MethodInfo, best_overloads, find_methods, named_class
from .scan import Analyzer
from .summary import ParamSink, Site, Summary, argument, parameter_env, returned, sink_hits
from .values import CLEAN, Env, Origin, Val, deep, join, join_envs, mix


def method_summary(an: Analyzer, m: MethodInfo) -> Summary | None:
    """``m``'s summary, interpreting ``m`` the first time it is asked for (so callees run before
    their callers); None while ``m`` is being interpreted, which is what a recursive call sees."""
    if m.key in an.summaries:
        return an.summaries[m.key]
    an.summaries[m.key] = None
    run = MethodRun(an, m)
    s = Summary(run.run(), frozenset(run.param_sinks))
    an.summaries[m.key] = s
    return s


class MethodRun:
    """Interpret one method; collect its return value, parameter-to-sink facts and findings."""

    def __init__(self, an: Analyzer, m: MethodInfo) -> None:
        self.an = an
        self.m = m
        self.cls = m.cls
        self.fidx = m.cls.file_idx
        self.returns: list[Val] = []
        self.param_sinks: set[ParamSink] = set()
        self.breaks: list[Env | None] = []  # at the `break`s of the innermost loop or switch

    def run(self) -> Val:
        """Interpret the body; return the join of what the method returns."""
        env = parameter_env(self.m, Origin.request(self.fidx, line_of(self.m.node)))
        body = child(self.m.node, "body")
        if body is not None:
            self.stmt(body, env)
        return reduce(join, self.returns) if self.returns else CLEAN

    # --- statements: each takes the environment before it and returns the one after it, or
    # None when no path goes on (return, throw, break). `env` may be changed in place.
    def block(self, nodes: list[Node], env: Env | None) -> Env | None:
        for s in nodes:
            if env is None:
                return None
            env = self.stmt(s, env)
        return env

    def stmt(self, n: Node, env: Env) -> Env | None:
        t = n.type
        if t in syn.BLOCKS:
            return self.block(children(n), env)
        if t == "local_variable_declaration":
            typ = syn.declared_type(n)
            for d in n.children_by_field_name("declarator"):
                v = self.expr(child(d, "value"), env)
                env[text(child(d, "name"))] = v.with_type(typ if typ != "var" else None)
                self.an.record(self.fidx, d, credentials.named_hits(text(child(d, "name")), v))
            return env
        if t == "if_statement":
            cond_node = child(n, "condition")
            cond = self.expr(cond_node, env)
            cons, alt = child(n, "consequence"), child(n, "alternative")
            if cond.const is True:
                return self.stmt(cons, env) if cons is not None else env
            if cond.const is False:
                return self.stmt(alt, env) if alt is not None else env
            on_true, on_false = guards.path_checks(cond_node)
            env_t = guards.confine(on_true, dict(env), self.read_field)
            env_f = guards.confine(on_false, dict(env), self.read_field)
            a = self.stmt(cons, env_t) if cons is not None else env_t
            b = self.stmt(alt, env_f) if alt is not None else env_f
            return join_envs([a, b])
        if t in syn.LOOPS:
            return self._loop(n, env)
        if t == "switch_expression":
            return self._switch(n, env)
        if t in syn.TRY:
            return self._try(n, env)
        if t == "return_statement":
            kids = children(n)
            self.returns.append(self.expr(kids[0], env) if kids else CLEAN)
            return None
        if t == "break_statement":
            self.breaks.append(env)
            return None
        if t == "continue_statement":
            return None
        if t in ("labeled_statement", "synchronized_statement"):
            return self.block([c for c in children(n) if c.type == "block"], env)
        if t in syn.INERT_STATEMENTS:
            return env
        for c in children(n):  # anything else (an expression statement, a throw): its parts
            self.expr(c, env)
        return None if t == "throw_statement" else env

    def _loop(self, n: Node, env: Env) -> Env | None:
        """The body runs twice, the second time from the join of the entry and the first pass,
        so what one iteration leaves is seen by the next (two passes, not a fixpoint)."""
        if n.type == "for_statement":
            for init in n.children_by_field_name("init"):
                if init.type.endswith("declaration"):
                    self.stmt(init, env)
                else:
                    self.expr(init, env)
        if n.type == "enhanced_for_statement":
            it = self.expr(child(n, "value"), env)
            env[text(child(n, "name"))] = deep(it).with_type(syn.declared_type(n))
        cond = child(n, "condition")
        if cond is not None and self.expr(cond, env).const is False:
            return env
        saved, self.breaks = self.breaks, []
        body = child(n, "body")
        first = self.stmt(body, dict(env)) if body is not None else env
        merged = join_envs([env, first])
        second = self.stmt(body, dict(merged)) if body is not None and merged is not None else None
        out = join_envs([env, first, second, *self.breaks])
        self.breaks = saved
        return out

    def _switch(self, n: Node, env: Env) -> Env | None:
        """A selector that folds runs from its matching case (or ``default``) only."""
        sel = self.expr(child(n, "condition"), env).const
        body = child(n, "body")
        groups = children(body) if body is not None else []
        start = None
        if sel is not None:
            for i, g in enumerate(groups):  # the first case whose label equals the selector
                for lab in (c for c in children(g) if c.type == "switch_label"):
                    vals = children(lab)
                    if start is None and any(self.expr(v, env).const == sel for v in vals):
                        start = i
            if start is None:
                start = next((i for i, g in enumerate(groups) if syn.has_default(g)), None)
            if start is None:
                return env
        saved, self.breaks = self.breaks, []
        outs: list[Env | None] = []
        for i in [start] if start is not None else range(len(groups)):
            e: Env | None = dict(env)
            for g in groups[i:]:  # fall through until a break or return
                if e is None:
                    break
                if g.type == "switch_rule":
                    e = self._rule(g, e)
                    break
                e = self.stmt(g, e)
            outs.append(e)
        if start is None and not any(syn.has_default(g) for g in groups):
            outs.append(env)
        result = join_envs([*outs, *self.breaks])
        self.breaks = saved
        return result

    def _rule(self, g: Node, env: Env) -> Env | None:
        """``case X -> body``: only a block, a throw or an expression statement runs."""
        for c in children(g):
            if c.type != "switch_label":
                return self.stmt(c, env) if c.type in syn.RULE_BODIES else env
        return env

    def _try(self, n: Node, env: Env) -> Env | None:
        """A catch may start anywhere in the body: from the join of before and after it."""
        res = child(n, "resources")
        for r in children(res) if res is not None else []:
            name = child(r, "name")
            v = self.expr(child(r, "value"), env)
            if name is not None:
                env[text(name)] = v.with_type(syn.declared_type(r))
        body = child(n, "body")
        before = dict(env)
        after = self.stmt(body, env) if body is not None else env
        outs: list[Env | None] = [after]
        fin = None
        for c in children(n):
            if c.type == "catch_clause":
                start = join_envs([before, after]) or dict(before)
                cb = child(c, "body")
                outs.append(self.stmt(cb, dict(start)) if cb is not None else start)
            elif c.type == "finally_clause":
                fin = next((b for b in children(c) if b.type == "block"), None)
        out = join_envs(outs)
        if fin is not None:
            out = self.stmt(fin, out if out is not None else dict(before))
        return out

    # --- expressions -----------------------------------------------------------------------
    def expr(self, n: Node | None, env: Env) -> Val:
        """The abstract value of expression ``n``; assignments update ``env`` in place."""
        if n is None:
            return CLEAN
        t = n.type
        if t in syn.LITERALS:
            return ops.literal(t, text(n))
        if t == "identifier":
            return env[text(n)] if text(n) in env else self.read_field(text(n))
        if t == "parenthesized_expression":
            inner = children(n)
            return self.expr(inner[0], env) if inner else CLEAN
        if t == "binary_expression":
            op = text(child(n, "operator"))
            a = self.expr(child(n, "left"), env)
            done = ops.short_circuit(op, a)  # the right side may never run
            return (
                done if done is not None else ops.binary(op, a, self.expr(child(n, "right"), env))
            )
        if t == "unary_expression":
            v = self.expr(child(n, "operand"), env)
            return ops.unary(text(child(n, "operator")), v)
        if t == "ternary_expression":
            c = self.expr(child(n, "condition"), env)
            if c.const is True:
                return self.expr(child(n, "consequence"), env)
            if c.const is False:
                return self.expr(child(n, "alternative"), env)
            yes = self.expr(child(n, "consequence"), env)
            return join(yes, self.expr(child(n, "alternative"), env))
        if t == "assignment_expression":
            return self._assign(n, env)
        if t == "cast_expression":
            v = self.expr(child(n, "value"), env)
            return ops.cast(v, syn.declared_type(n))
        if t == "method_invocation":
            return self.call(n, env)
        if t == "object_creation_expression":
            return self.new(n, env)
        if t in ("array_creation_expression", "array_initializer"):
            init = child(n, "value") if t == "array_creation_expression" else n
            if init is None:
                for d in children(n):
                    self.expr(d, env)
                return Val(typ=syn.declared_type(n) + "[]")
            return Val(elems=tuple(self.expr(e, env) for e in children(init)))
        if t == "array_access":
            arr = self.expr(child(n, "array"), env)
            return ops.element(arr, self.expr(child(n, "index"), env).const)
        if t == "field_access":
            return self._field_access(n, env)
        if t == "update_expression":
            target = children(n)[0] if children(n) else None
            if target is not None and target.type == "identifier" and text(target) in env:
                env[text(target)] = replace(env[text(target)], const=None)
            return CLEAN
        if t == "this":
            return Val(typ=self.cls.name)
        if t in syn.OPAQUE_EXPRESSIONS:
            return CLEAN
        # Unknown expression kinds: whatever flows into them flows out.
        return mix([self.expr(c, env) for c in children(n)])

    def _assign(self, n: Node, env: Env) -> Val:
        left, right = child(n, "left"), child(n, "right")
        op = text(child(n, "operator"))
        v = self.expr(right, env)
        if left is None:
            return v
        if op != "=":
            v = ops.compound(op, self.expr(left, env), v)
        self.an.record(self.fidx, n, credentials.named_hits(text(child(left, "field") or left), v))
        if left.type == "identifier":
            name = text(left)
            if name in env:
                env[name] = v.with_type(env[name].typ)
            else:
                self.write_field(name, v)
        elif left.type == "field_access":
            obj = child(left, "object")
            if obj is not None and obj.type == "this":
                self.write_field(text(child(left, "field")), v)
        elif left.type == "array_access":
            arr_node = child(left, "array")
            if arr_node is not None and arr_node.type == "identifier" and text(arr_node) in env:
                arr = env[text(arr_node)]  # read before the index runs, as Java does
                i = self.expr(child(left, "index"), env).const
                env[text(arr_node)] = ops.store(arr, i, v)
        return v

    def _field_access(self, n: Node, env: Env) -> Val:
        obj, fld = child(n, "object"), text(child(n, "field"))
        if obj is None:
            return CLEAN
        if obj.type == "this":
            return self.read_field(fld)
        cls = named_class(obj, self.cls, env)
        if cls is not None:
            return self.an.static_field(cls, fld, self.cls, self.expr)
        v = self.expr(obj, env)
        return CLEAN if fld == "length" else deep(v)

    # --- fields: the run's shared values (scan.Analyzer.field), initialisers evaluated here ---
    def read_field(self, name: str) -> Val:
        owner = self.cls.field_owner(name)
        return self.an.field(owner, name, self.expr) if owner is not None else CLEAN

    def write_field(self, name: str, v: Val) -> None:
        owner = self.cls.field_owner(name)
        if owner is not None:
            self.an.write_field(owner, name, v, self.expr)

    # --- sinks, calls and object creation --------------------------------------------------
    def sink(self, n: Node, cwe: int, vals: list[Val], via: Site | None = None) -> None:
        """Request data in ``vals`` is a finding; a parameter becomes a summary fact; text
        assembled from a parameter at a query sink is a low-confidence structural finding."""
        if cwe == 22 and via is None and guards.normalised_later(n):
            return  # a path normalised at once is judged where it is used
        for c in checks.sink_cwes(cwe, self.an.weak_random):
            hits = sink_hits(vals, c, self.m)
            for o in hits.tainted:
                self.an.report(self.fidx, n, c, o, via)
            where = via or Site(self.fidx, line_of(n), col_of(n))
            self.param_sinks.update(ParamSink(i, c, *where) for i in hits.params)
            if hits.built and not hits.tainted:
                self.an.report_built(self.fidx, n, c, self.m, min(hits.built), via)

    def call(self, n: Node, env: Env) -> Val:
        name = text(child(n, "name"))
        objn = child(n, "object")
        arg_nodes = syn.arguments(n)
        args = [self.expr(a, env) for a in arg_nodes]
        static_cls: str | None = None
        recv: Val | None = None
        project = self.an.project
        if objn is None or objn.type == "this":
            cands = project.enclosing_methods(self.cls, name, len(args))
            rtype: str | None = self.cls.name
        else:
            static_cls = named_class(objn, self.cls, env)
            if static_cls is None:
                recv = self.expr(objn, env)
            rtype = static_cls or (recv.typ if recv is not None else None)
            cands = project.methods_of(rtype, self.cls, name, len(args))
        owner, value_of = static_cls or rtype, partial(self.expr, env=env)
        self.an.record(self.fidx, n, credentials.call_hits(owner, name, args, arg_nodes, value_of))
        if cands:
            return self.apply(n, best_overloads(cands, args), args)
        env.update(library.filled_arguments(name, recv, arg_nodes, env))
        if library.reads_request(name, static_cls, rtype):
            source = Origin.request(self.fidx, line_of(n))
            return Val(frozenset({source}), typ=api.SOURCE_METHODS[name])
        random = Origin.random(self.fidx, line_of(n))
        rule = checks.check_call(name, static_cls, rtype, args, random, self.an.weak_random)
        if rule is not None:
            self._record(n, rule)
            if rule.value is not None:
                return rule.value
        for cwe, vals in library.call_sinks(name, rtype, args):
            self.sink(n, cwe, vals)
        value, changed = library.call_result(name, static_cls, rtype, objn, recv, args, env)
        env.update(changed)
        return value

    def _record(self, n: Node, rule: checks.CallRule) -> None:
        """Record the findings and summary facts of a call with a rule of its own at ``n``."""
        for r in rule.reports:
            self.an.report(self.fidx, n, r.cwe, r.origin, None, note=r.note)
        where = Site(self.fidx, line_of(n), col_of(n))
        self.param_sinks.update(ParamSink(i, 330, *where) for i in rule.params)

    def apply(self, n: Node, cands: list[MethodInfo], args: list[Val]) -> Val:
        """The call's result from the callees' summaries; their parameter sinks fire here."""
        out: Val | None = None
        for m in cands:
            s = method_summary(self.an, m)
            v = returned(s, m, args)
            for ps in s.param_sinks if s is not None else ():
                self.sink(n, ps.cwe, [argument(args, ps.param, m)], via=ps.site)
            out = v if out is None else join(out, v)
        return out if out is not None else CLEAN

    def new(self, n: Node, env: Env) -> Val:
        typ = syn.declared_type(n)
        args = [self.expr(a, env) for a in syn.arguments(n)]
        value_of, arg_nodes = partial(self.expr, env=env), syn.arguments(n)
        hits = credentials.call_hits(typ, "<init>", args, arg_nodes, value_of)
        self.an.record(self.fidx, n, hits)
        classes = self.an.project.classes(typ, self.cls)
        if classes:
            ctors = find_methods(classes, "<init>", len(args))
            if ctors:
                self.apply(n, best_overloads(ctors, args), args)
            return Val(mix([deep(a) for a in args]).origins, typ=typ)
        if typ in api.CTOR_SINKS:
            self.sink(n, api.CTOR_SINKS[typ], args)
        if typ == "Random":
            rule = checks.random_value(Origin.random(self.fidx, line_of(n)), self.an.weak_random)
            self._record(n, rule)
            return rule.value if rule.value is not None else CLEAN
        return library.new_object(typ, args)
