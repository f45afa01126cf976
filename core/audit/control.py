"""Control flow inside a method body: loops, switches, try statements.

Functions over the interpreter's method run (:class:`.closures.Run`): each takes the
environment before the statement and returns the one after it, or None when no path goes on.
"""

from __future__ import annotations

from . import closures, objects
from . import syntax as syn
from .closures import Run
from .java import Node, child, children, text
from .values import Env, deep, join_envs


def loop(run: Run, n: Node, env: Env) -> Env | None:
    """The body runs twice, the second time from the join of the entry and the first pass,
    so what one iteration leaves is seen by the next (two passes, not a fixpoint)."""
    if n.type == "for_statement":
        for init in n.children_by_field_name("init"):
            if init.type.endswith("declaration"):
                run.stmt(init, env)
            else:
                run.expr(init, env)
    if n.type == "enhanced_for_statement":
        it = run.expr(child(n, "value"), env)
        env[text(child(n, "name"))] = deep(it).with_type(syn.declared_type(n))
    cond = child(n, "condition")
    if cond is not None and run.expr(cond, env).const is False:
        return env
    saved, run.breaks = run.breaks, []
    body = child(n, "body")
    first = run.stmt(body, dict(env)) if body is not None else env
    merged = join_envs([env, first])
    second = run.stmt(body, dict(merged)) if body is not None and merged is not None else None
    out = join_envs([env, first, second, *run.breaks])
    run.breaks = saved
    return out


def switch(run: Run, n: Node, env: Env) -> Env | None:
    """A selector that folds runs from its matching case (or ``default``) only."""
    sel = run.expr(child(n, "condition"), env).const
    body = child(n, "body")
    groups = children(body) if body is not None else []
    start = None
    if sel is not None:
        for i, g in enumerate(groups):  # the first case whose label equals the selector
            for lab in (c for c in children(g) if c.type == "switch_label"):
                vals = children(lab)
                if start is None and any(run.expr(v, env).const == sel for v in vals):
                    start = i
        if start is None:
            start = next((i for i, g in enumerate(groups) if syn.has_default(g)), None)
        if start is None:
            return env
    saved, run.breaks = run.breaks, []
    outs: list[Env | None] = []
    for i in [start] if start is not None else range(len(groups)):
        e: Env | None = dict(env)
        for g in groups[i:]:  # fall through until a break or return
            if e is None:
                break
            if g.type == "switch_rule":
                e = _rule(run, g, e)
                break
            e = run.stmt(g, e)
        outs.append(e)
    if start is None and not any(syn.has_default(g) for g in groups):
        outs.append(env)
    result = join_envs([*outs, *run.breaks])
    run.breaks = saved
    return result


def _rule(run: Run, g: Node, env: Env) -> Env | None:
    """``case X -> body``: only a block, a throw or an expression statement runs."""
    for c in children(g):
        if c.type != "switch_label":
            return run.stmt(c, env) if c.type in syn.RULE_BODIES else env
    return env


def try_statement(run: Run, n: Node, env: Env) -> Env | None:
    """A catch may start anywhere in the body: from the join of before and after it."""
    res = child(n, "resources")
    for r in children(res) if res is not None else []:
        name = child(r, "name")
        v = run.expr(child(r, "value"), env)
        if name is not None:
            if not objects.made_here(run.an, child(r, "value"), v):
                v = v.with_type(syn.declared_type(r))
            env[text(name)] = v
            closures.note_wrapper(run.wraps, text(name), child(r, "value"), env)
    body = child(n, "body")
    before = dict(env)
    after = run.stmt(body, env) if body is not None else env
    outs: list[Env | None] = [after]
    fin = None
    for c in children(n):
        if c.type == "catch_clause":
            start = join_envs([before, after]) or dict(before)
            cb = child(c, "body")
            outs.append(run.stmt(cb, dict(start)) if cb is not None else start)
        elif c.type == "finally_clause":
            fin = next((b for b in children(c) if b.type == "block"), None)
    out = join_envs(outs)
    if fin is not None:
        out = run.stmt(fin, out if out is not None else dict(before))
    return out
