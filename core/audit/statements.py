"""Statements of the per-method interpreter: flow-sensitive, with constant-folded branches.

One :class:`MethodRun` interprets one method body once, with each parameter standing for
itself (origin ``("P", -1, i)``); what reaches its return and its sinks becomes the method's
summary, and request data that reaches a sink becomes a finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import guards
from .calls import CallsMixin
from .exprs import expr
from .java import Node, child, children, line_of, text
from .java_api import SPRING_SOURCE_ANNOTATIONS, is_request_type
from .project import simple_type
from .values import CLEAN, Val, deep, join

if TYPE_CHECKING:
    from .project import MethodInfo
    from .scan import Analyzer

Env = dict[str, Val]
_LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "enhanced_for_statement"})


def join_envs(envs: list[Env | None]) -> Env | None:
    live = [e for e in envs if e is not None]
    if not live:
        return None
    out = dict(live[0])
    for e in live[1:]:
        for k in set(out) | set(e):
            out[k] = join(out.get(k, CLEAN), e.get(k, CLEAN))
    return out


class MethodRun(CallsMixin):
    """Interpret one method; collect its return value, parameter-to-sink facts and findings."""

    def __init__(self, an: Analyzer, m: MethodInfo) -> None:
        self.an = an
        self.m = m
        self.cls = m.cls
        self.fidx = m.cls.file_idx
        self.returns: list[Val] = []
        self.param_sinks: set[tuple[int, int, int, int, int]] = set()
        self.breaks: list[Env | None] = []

    def run(self) -> Val:
        env: Env = {}
        line = line_of(self.m.node)
        for i, (name, typ, annos) in enumerate(self.m.params):
            origins: set[tuple[str, int, int]] = set()
            if not is_request_type(typ) and "Response" not in typ:
                origins.add(("P", -1, i))
            if SPRING_SOURCE_ANNOTATIONS.intersection(annos):
                origins.add(("S", self.fidx, line))
            env[name] = Val(origins=frozenset(origins), typ=typ)
        body = child(self.m.node, "body")
        if body is not None:
            self.stmt(body, env)
        if not self.returns:
            return CLEAN
        out = self.returns[0]
        for r in self.returns[1:]:
            out = join(out, r)
        return out

    # --- statements ----------------------------------------------------------------------
    def block(self, nodes: list[Node], env: Env | None) -> Env | None:
        for s in nodes:
            if env is None:
                return None
            env = self.stmt(s, env)
        return env

    def stmt(self, n: Node, env: Env) -> Env | None:
        t = n.type
        if t in ("block", "constructor_body", "switch_block_statement_group"):
            return self.block(children(n), env)
        if t == "local_variable_declaration":
            typ = simple_type(text(child(n, "type")))
            for d in n.children_by_field_name("declarator"):
                name = text(child(d, "name"))
                env[name] = expr(self, child(d, "value"), env).with_type(
                    typ if typ != "var" else None
                )
            return env
        if t == "expression_statement":
            for c in children(n):
                expr(self, c, env)
            return env
        if t == "if_statement":
            cond_node = child(n, "condition")
            cond = expr(self, cond_node, env)
            cons, alt = child(n, "consequence"), child(n, "alternative")
            if cond.const is True:
                return self.stmt(cons, env) if cons is not None else env
            if cond.const is False:
                return self.stmt(alt, env) if alt is not None else env
            on_true, on_false = guards.path_checks(cond_node)
            env_t = guards.confine(self, on_true, dict(env))
            env_f = guards.confine(self, on_false, dict(env))
            a = self.stmt(cons, env_t) if cons is not None else env_t
            b = self.stmt(alt, env_f) if alt is not None else env_f
            return join_envs([a, b])
        if t in _LOOPS:
            return self._loop(n, env)
        if t == "switch_expression":
            return self._switch(n, env)
        if t in ("try_statement", "try_with_resources_statement"):
            return self._try(n, env)
        if t == "return_statement":
            kids = children(n)
            self.returns.append(expr(self, kids[0], env) if kids else CLEAN)
            return None
        if t == "throw_statement":
            for c in children(n):
                expr(self, c, env)
            return None
        if t == "break_statement":
            self.breaks.append(env)
            return None
        if t == "continue_statement":
            return None
        if t in ("labeled_statement", "synchronized_statement"):
            return self.block([c for c in children(n) if c.type == "block"], env)
        if t in (
            "class_declaration",
            "local_class_declaration",
            "interface_declaration",
            ";",
            "empty_statement",
            "assert_statement",
            "yield_statement",
        ):
            return env
        for c in children(n):  # anything else: evaluate what is inside, in order
            expr(self, c, env)
        return env

    def _loop(self, n: Node, env: Env) -> Env | None:
        if n.type == "for_statement":
            for init in n.children_by_field_name("init"):
                self.stmt(init, env) if init.type.endswith("declaration") else expr(self, init, env)
        if n.type == "enhanced_for_statement":
            it = expr(self, child(n, "value"), env)
            env[text(child(n, "name"))] = deep(it).with_type(simple_type(text(child(n, "type"))))
        cond = child(n, "condition")
        if cond is not None and expr(self, cond, env).const is False:
            return env
        saved = self.breaks
        self.breaks = []
        body = child(n, "body")
        first = self.stmt(body, dict(env)) if body is not None else env
        merged = join_envs([env, first])
        second = self.stmt(body, dict(merged)) if body is not None and merged is not None else None
        out = join_envs([env, first, second, *self.breaks])
        self.breaks = saved
        return out

    def _switch(self, n: Node, env: Env) -> Env | None:
        sel = expr(self, child(n, "condition"), env).const
        body = child(n, "body")
        groups = [g for g in children(body)] if body is not None else []
        start = None
        if sel is not None:
            for i, g in enumerate(groups):
                labels = [c for c in children(g) if c.type == "switch_label"]
                for lab in labels:
                    vals = children(lab)
                    if start is None and any(expr(self, v, env).const == sel for v in vals):
                        start = i
            if start is None:
                start = next(
                    (
                        i
                        for i, g in enumerate(groups)
                        if any(c.type == "switch_label" and not children(c) for c in children(g))
                    ),
                    None,
                )
            if start is None:
                return env
        saved = self.breaks
        self.breaks = []
        outs: list[Env | None] = []
        entries = [start] if start is not None else list(range(len(groups)))
        for i in entries:
            e: Env | None = dict(env)
            for g in groups[i:]:  # fall through until a break or return
                if e is None:
                    break
                e = self.stmt(g, e) if g.type != "switch_rule" else self._rule(g, e)
                if g.type == "switch_rule":
                    break
            outs.append(e)
        has_default = any(
            c.type == "switch_label" and not children(c) for g in groups for c in children(g)
        )
        if start is None and not has_default:
            outs.append(env)
        result = join_envs([*outs, *self.breaks])
        self.breaks = saved
        return result

    def _rule(self, g: Node, env: Env) -> Env | None:
        for c in children(g):
            if c.type != "switch_label":
                return (
                    self.stmt(c, env)
                    if c.type in ("block", "throw_statement", "expression_statement")
                    else env
                )
        return env

    def _try(self, n: Node, env: Env) -> Env | None:
        res = child(n, "resources")
        if res is not None:
            for r in children(res):
                name = child(r, "name")
                v = expr(self, child(r, "value"), env)
                if name is not None:
                    env[text(name)] = v.with_type(simple_type(text(child(r, "type"))))
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
