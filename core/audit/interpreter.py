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

from . import checks, closures, control, credentials, guards, inputs, library, objects, untrusted
from . import java_api as api
from . import operators as ops
from . import syntax as syn
from .java import Node, child, children, col_of, line_of, text
from .project import ClassInfo, MethodInfo, best_overloads, find_methods, named_class, simple_type
from .scan import Analyzer
from .summary import (
    ParamField,
    ParamSink,
    Site,
    Summary,
    argument,
    parameter_env,
    returned,
    sink_hits,
)
from .values import CLEAN, Env, Origin, Val, as_number, deep, join, join_envs, mix


def method_summary(an: Analyzer, m: MethodInfo) -> Summary | None:
    """``m``'s summary, interpreting ``m`` the first time it is asked for (so callees run before
    their callers); None while ``m`` is being interpreted, which is what a recursive call sees."""
    if m.key in an.summaries:
        return an.summaries[m.key]
    an.summaries[m.key] = None
    run = MethodRun(an, m)
    try:
        ret = run.run()
    except RecursionError:  # an expression nested deeper than Python's stack (generated code)
        an.too_deep.add(an.project.files[m.cls.file_idx].path)
        an.summaries[m.key] = Summary(CLEAN, frozenset())
        return an.summaries[m.key]
    got = set(run.ret_fields)
    getter = got.pop() if len(got) == 1 else None
    s = Summary(ret, frozenset(run.param_sinks), frozenset(run.param_fields), getter)
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
        self.param_fields: set[ParamField] = set()
        self.ret_fields: list[str | None] = []  # per return: the own field it reads, if one
        self.breaks: list[Env | None] = []  # at the `break`s of the innermost loop or switch
        self.wraps: dict[str, set[str]] = {}  # a stream variable -> the variables it wraps

    def run(self) -> Val:
        """Interpret the body; return the join of what the method returns."""
        env = parameter_env(self.m, self.fidx, line_of(self.m.node))
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
                init = child(d, "value")
                v = self.expr(init, env)
                if not objects.made_here(self.an, init, v):
                    v = v.with_type(typ if typ != "var" else None)
                if typ in api.NON_TEXT_TYPES:
                    v = as_number(v)
                env[text(child(d, "name"))] = v
                closures.note_wrapper(self.wraps, text(child(d, "name")), init, env)
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
            env_t = self._checked(on_true, env, copy=True)
            env_f = self._checked(on_false, env, copy=True)
            a = self.stmt(cons, env_t) if cons is not None else env_t
            b = self.stmt(alt, env_f) if alt is not None else env_f
            return join_envs([a, b])
        if t in syn.LOOPS:
            return control.loop(self, n, env)
        if t == "switch_expression":
            return control.switch(self, n, env)
        if t in syn.TRY:
            return control.try_statement(self, n, env)
        if t == "return_statement":
            kids = children(n)
            self.returns.append(self.expr(kids[0], env) if kids else CLEAN)
            if kids and syn.redirect_view(kids[0]):  # a controller's `"redirect:" + url`
                self.sink(kids[0], 601, [self.returns[-1]])
            hits = credentials.named_hits(self.m.name, self.returns[-1], returned=True)
            self.an.record(self.fidx, n, hits)
            self.ret_fields.append(objects.own_field(self.cls, kids[0], env) if kids else None)
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

    def _checked(self, facts: list[guards.Fact], env: Env, *, copy: bool = False) -> Env:
        """``env`` with what a condition's ``facts`` prove applied: a copy when there are any
        (or when ``copy`` asks for one)."""
        if not facts:
            return dict(env) if copy else env
        return guards.confine(facts, dict(env), lambda x: self.expr(x, env))

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
            on_true, on_false = guards.path_checks(child(n, "condition"))
            check = self._checked
            yes = self.expr(child(n, "consequence"), check(on_true, env))
            return join(yes, self.expr(child(n, "alternative"), check(on_false, env)))
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
            return objects.field_access(self, n, env)
        if t == "update_expression":
            target = children(n)[0] if children(n) else None
            if target is not None and target.type == "identifier" and text(target) in env:
                env[text(target)] = replace(env[text(target)], const=None)
            return CLEAN
        if t == "this":
            return Val(typ=self.cls.name)
        if t == "instanceof_expression":  # `m instanceof TextMessage text` binds `text`
            v = self.expr(child(n, "left"), env)
            if (bound := child(n, "name")) is not None:
                env[text(bound)] = v.with_type(simple_type(text(child(n, "right"))))
            return CLEAN
        if t == "lambda_expression":
            return closures.lambda_value(self, n, CLEAN, env)
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
                typ = env[name].typ
                env[name] = as_number(v) if typ in api.NON_TEXT_TYPES else v.with_type(typ)
            else:
                self.write_field(name, v)
        elif left.type == "field_access":
            obj, fld = child(left, "object"), text(child(left, "field"))
            if obj is not None and obj.type == "this":
                self.write_field(fld, v)
            elif obj is not None and obj.type == "identifier" and text(obj) in env:
                objects.set_member(self, text(obj), fld, v, env)
        elif left.type == "array_access":
            arr_node = child(left, "array")
            if arr_node is not None and arr_node.type == "identifier" and text(arr_node) in env:
                arr = env[text(arr_node)]  # read before the index runs, as Java does
                i = self.expr(child(left, "index"), env).const
                env[text(arr_node)] = ops.store(arr, i, v)
        return v

    # --- fields: the run's shared values (scan.Analyzer.field), initialisers evaluated here ---
    def read_field(self, name: str) -> Val:
        owner = self.cls.field_owner(name)
        return self.an.field(owner, name, self.expr) if owner is not None else CLEAN

    def write_field(self, name: str, v: Val) -> None:
        owner = self.cls.field_owner(name)
        if owner is not None:
            self.store(owner, name, v)

    def store(self, owner: ClassInfo, name: str, v: Val) -> None:
        """Field ``name`` of ``owner`` may now hold ``v``; a parameter stored there becomes a
        summary fact, so each caller stores what it passes (a constructor, a setter)."""
        self.an.write_field(owner, name, v, self.expr)
        key = (owner.file_idx, owner.node.start_byte)
        for o in deep(v).origins:
            if o.is_param:
                self.param_fields.add(ParamField(o.position, key, name))

    # --- sinks, calls and object creation --------------------------------------------------
    def sink(self, n: Node, cwe: int, vals: list[Val], via: Site | None = None) -> None:
        """Request data in ``vals`` is a finding; a parameter becomes a summary fact; text
        assembled from a parameter at a query sink is a low-confidence structural finding."""
        if cwe == 22 and via is None and guards.normalised_later(n):
            return  # a path normalised at once is judged where it is used
        if cwe == 22:  # a stream passed beside a path (`Files.copy(in, target)`) is no path
            vals = [v for v in vals if not (v.typ or "").endswith(api.STREAM_TYPES)]
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
        static_cls: str | None = None
        recv: Val | None = None
        if objn is not None and objn.type != "this":
            static_cls = named_class(objn, self.cls, env)
            if static_cls is None:
                recv = self.expr(objn, env)
        args = closures.arguments(self, arg_nodes, recv, env)
        project = self.an.project
        if objn is None or objn.type == "this":
            cands = project.enclosing_methods(self.cls, name, len(args))
            rtype: str | None = self.cls.name
        else:
            rtype = static_cls or (recv.typ if recv is not None else None)
            cands = project.methods_of(rtype, self.cls, name, len(args))
        self._secrets(n, static_cls or rtype, name, args, arg_nodes, env)
        if cands:
            holder = text(objn) if objn is not None and text(objn) in env else None
            return self.apply(n, best_overloads(cands, args), args, holder, env)
        env.update(library.filled_arguments(name, recv, arg_nodes, env))
        if recv is not None and not args and (field := objects.accessor(self, recv, name)):
            return field
        inputs.fill(self, n, name, rtype, arg_nodes, env)
        for cwe, vals in library.call_sinks(name, rtype, args):
            self.sink(n, cwe, vals)
        entered = inputs.entering(self, n, name, static_cls, rtype, objn, recv, env)
        if entered is not None:
            return entered
        streamed = closures.streamed(self, name, arg_nodes, recv, args, env)
        if streamed is not None:
            return streamed
        random = Origin.random(self.fidx, line_of(n))
        rule = checks.check_call(name, static_cls, rtype, args, random, self.an.weak_random, recv)
        if rule is not None:
            self._record(n, rule)
            if rule.value is not None:
                # A setting's in-code default still carries what its store holds.
                return library.with_taint_of(rule.value, recv)
        value, changed = library.call_result(name, static_cls, rtype, objn, recv, args, env)
        closures.into_wrapped(self.wraps, changed, env)
        path = library.receiver_path(objn, env)
        if path is not None and (settings := inputs.loaded(self, n, name, rtype, path, args)):
            changed[path] = settings
        objects.update(self, changed, env)
        return value

    def _secrets(
        self, n: Node, owner: str | None, name: str, args: list[Val], nodes: list[Node], env: Env
    ) -> None:
        """A call that takes a password or key: a literal there, a predictable random value,
        a password read off the network (:mod:`.credentials`)."""
        hits = credentials.call_hits(owner, name, args, nodes, partial(self.expr, env=env))
        self.an.record(self.fidx, n, hits)
        self.sink(n, 319, credentials.credential_args(owner, name, args))

    def _record(self, n: Node, rule: checks.CallRule) -> None:
        """Record the findings and summary facts of a call with a rule of its own at ``n``."""
        for r in rule.reports:
            self.an.report(self.fidx, n, r.cwe, r.origin, None, note=r.note)
        where = Site(self.fidx, line_of(n), col_of(n))
        self.param_sinks.update(ParamSink(i, 330, *where) for i in rule.params)

    def apply(
        self,
        n: Node,
        cands: list[MethodInfo],
        args: list[Val],
        holder: str | None = None,
        env: Env | None = None,
    ) -> Val:
        """The call's result from the callees' summaries; their parameter sinks fire here.

        With ``holder`` (the local variable the call is made on), a setter fills that object's
        slot and a getter reads it, so two objects of one class keep their data apart."""
        out: Val | None = None
        for m in cands:
            self.an.called.add(m.key)
            self.an.passed.update(
                (m.key, i) for i in range(len(m.params)) if argument(args, i, m).origins
            )
            s = method_summary(self.an, m)
            v = returned(s, m, args)
            for ps in s.param_sinks if s is not None else ():
                self.sink(n, ps.cwe, [argument(args, ps.param, m)], via=ps.site)
            for pf in s.param_fields if s is not None else ():
                self.store(self.an.owner(pf.owner), pf.name, argument(args, pf.param, m))
            if holder is not None and env is not None and s is not None:
                v = objects.on_holder(m, s, args, env, holder) or v
            out = v if out is None else join(out, v)
        return out if out is not None else CLEAN

    def new(self, n: Node, env: Env) -> Val:
        typ = syn.declared_type(n)
        arg_nodes = syn.arguments(n)
        args = closures.arguments(self, arg_nodes, None, env)
        self._secrets(n, typ, "<init>", args, arg_nodes, env)
        body = child(n, "body") or next((c for c in children(n) if c.type == "class_body"), None)
        if body is not None:  # an anonymous class: its methods run here, on what they capture
            return mix([*map(deep, args), *closures.anonymous_class(self, body, env)], typ)
        classes = self.an.project.classes(typ, self.cls)
        if classes:
            return objects.construct(self, n, typ, find_methods(classes, "<init>", len(args)), args)
        if typ in api.CTOR_SINKS:
            self.sink(n, api.CTOR_SINKS[typ], args)
        if typ == "ModelAndView" and arg_nodes and syn.redirect_view(arg_nodes[0]):
            self.sink(n, 601, args[:1])
        if typ in untrusted.CTOR_SOURCES:
            origin = Origin.source(untrusted.CTOR_SOURCES[typ], self.fidx, line_of(n))
            return Val(frozenset({origin}), typ=typ)
        if typ == "Random":
            rule = checks.random_value(Origin.random(self.fidx, line_of(n)), self.an.weak_random)
            self._record(n, rule)
            return rule.value if rule.value is not None else CLEAN
        return library.new_object(typ, args)
