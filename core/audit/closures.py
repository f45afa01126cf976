"""Code that runs inside a method but is not its body: lambdas, method references, anonymous
classes; and streams that write through to the stream they wrap.

A lambda passed to a call on a receiver (``items.forEach(x -> ...)``, ``stream.map(...)``,
``map.forEach((k, v) -> ...)``) runs with its parameters bound to the receiver's contents; one
passed elsewhere (``new Thread(() -> ...)``) with clean parameters. Either way its body runs
once, where it is written, on the variables it captures, and its sinks fire there. A method
reference runs the project method it names on the same values. An anonymous class's methods
run when it is created. These are functions over the interpreter (:class:`Run`: what of a
method run they and :mod:`.objects` use), kept apart so that :mod:`.interpreter` stays the
statement and expression walk.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce
from typing import Protocol

from . import guards
from .java import Node, child, children, text
from .project import ClassInfo, MethodInfo, best_overloads, named_class
from .scan import Analyzer
from .values import CLEAN, Env, Origin, Val, deep, join, mix, sanitize

_FUNCTIONS = frozenset({"lambda_expression", "method_reference"})
# Calls whose result is what their function argument returns for each element.
MAPPERS = frozenset(
    {"map", "mapToObj", "mapToInt", "mapToLong", "mapToDouble", "flatMap", "thenApply"}
)


# Types that write through to (or read from) the object they are constructed over.
_WRAPPERS = ("Stream", "Writer", "Reader", "Channel", "Formatter", "Scanner")


class Run(Protocol):
    """What of the interpreter's method run the functions here use."""

    an: Analyzer
    cls: ClassInfo
    fidx: int
    returns: list[Val]
    breaks: list[Env | None]
    wraps: dict[str, set[str]]

    def read_field(self, name: str) -> Val: ...

    def write_field(self, name: str, v: Val) -> None: ...

    def store(self, owner: ClassInfo, name: str, v: Val) -> None: ...

    def expr(self, n: Node | None, env: Env) -> Val: ...

    def stmt(self, n: Node, env: Env) -> Env | None: ...

    def apply(self, n: Node, cands: list[MethodInfo], args: list[Val]) -> Val: ...

    def sink(self, n: Node, cwe: int, vals: list[Val]) -> None: ...


def filtered(run: Run, nodes: list[Node], recv: Val, env: Env) -> Val | None:
    """What passes ``recv.filter(f)`` when ``f`` is a guard (:mod:`.guards`): nothing tainted
    for an allow-list (``filter(ALLOWED::contains)``, ``filter(s -> s.matches("[a-z]+"))``),
    paths safe from traversal for ``filter(p -> p.startsWith(base))`` on normalised paths; None
    when ``f`` proves nothing."""
    if len(nodes) != 1:
        return None
    f = nodes[0]
    if f.type == "method_reference":
        kids = children(f)
        if len(kids) < 2 or text(kids[-1]) not in guards.MEMBERSHIP:
            return None
        trusted = not any(not o.is_param for o in run.expr(kids[0], env).origins)
        return Val(typ=recv.typ) if trusted else None
    params, body = child(f, "parameters"), child(f, "body")
    if f.type != "lambda_expression" or params is None or params.type != "identifier":
        return None
    if body is None or body.type == "block":
        return None
    probe = Val(frozenset({Origin.param(-1)}), norm=recv.norm)
    facts, _ = guards.path_checks(body)
    kept = guards.confine(facts, {text(params): probe}, lambda x: run.expr(x, env))[text(params)]
    if not kept.origins:
        return Val(typ=recv.typ)
    return sanitize(recv, kept.safe) if kept.safe else None


def streamed(
    run: Run, name: str, nodes: list[Node], recv: Val | None, args: list[Val], env: Env
) -> Val | None:
    """The result of ``recv.filter(f)`` when ``f`` is a guard, of ``recv.map(f)`` (what ``f``
    returns); None for any other call."""
    if recv is None:
        return None
    if name == "filter":
        return filtered(run, nodes, recv, env)
    if name in MAPPERS and len(nodes) == 1 and nodes[0].type in _FUNCTIONS:
        f = args[0]
        return Val(deep(f).origins, typ=recv.typ, norm=f.norm)
    return None


def arguments(run: Run, nodes: list[Node], recv: Val | None, env: Env) -> list[Val]:
    """The values of a call's arguments; a lambda or method reference among them runs on the
    receiver's contents (or, with no receiver, on what the other arguments carry)."""
    if not any(a.type in _FUNCTIONS for a in nodes):
        return [run.expr(a, env) for a in nodes]
    plain = {i: run.expr(a, env) for i, a in enumerate(nodes) if a.type not in _FUNCTIONS}
    bound = deep(recv) if recv is not None else mix([deep(v) for v in plain.values()])
    out: list[Val] = []
    for i, a in enumerate(nodes):
        if i in plain:
            out.append(plain[i])
        elif a.type == "lambda_expression":
            out.append(lambda_value(run, a, bound, env))
        else:
            out.append(method_reference(run, a, bound, env))
    return out


def lambda_value(run: Run, n: Node, bound: Val, env: Env) -> Val:
    """Run a lambda's body with each parameter bound to ``bound``; its value is what the body
    yields. Changes it makes to captured objects (``out.add(x)``) are kept."""
    params = child(n, "parameters")
    names: list[str] = []
    if params is not None and params.type == "identifier":
        names = [text(params)]
    elif params is not None:
        for p in children(params):
            if p.type == "identifier":
                names.append(text(p))
            elif p.type == "formal_parameter":
                names.append(text(child(p, "name")))
    body = child(n, "body")
    if body is None:
        return CLEAN
    return _nested(run, body, env, dict.fromkeys(names, bound))


def method_reference(run: Run, n: Node, bound: Val, env: Env) -> Val:
    """``this::handle``, ``Parser::parse``: the project methods named run on ``bound`` (one
    argument, or none for an instance method of the element's own class)."""
    kids = children(n)
    if len(kids) < 2 or kids[-1].type != "identifier":
        return bound
    name = text(kids[-1])
    if name in guards.NORMALIZERS:  # `map(Path::normalize)`
        return replace(bound, norm=True)
    for arity in (1, 0):
        cands = _candidates(run, kids[0], name, arity, env)
        if cands:
            return run.apply(n, best_overloads(cands, [bound] * arity), [bound] * arity)
    return bound


def _candidates(run: Run, target: Node, name: str, arity: int, env: Env) -> list[MethodInfo]:
    """The project methods ``target::name`` may name."""
    project = run.an.project
    if target.type == "this":
        return project.enclosing_methods(run.cls, name, arity)
    typ = named_class(target, run.cls, env) or run.expr(target, env).typ
    return project.methods_of(typ, run.cls, name, arity)


def anonymous_class(run: Run, body: Node, env: Env) -> list[Val]:
    """Run each method of an anonymous class's body once, on what it captures (its own
    parameters clean); returns what they return."""
    out: list[Val] = []
    for member in children(body):
        if member.type != "method_declaration":
            continue
        block = child(member, "body")
        params = child(member, "parameters")
        names = [
            text(child(p, "name"))
            for p in (children(params) if params is not None else [])
            if p.type == "formal_parameter"
        ]
        if block is not None:
            out.append(_nested(run, block, env, dict.fromkeys(names, CLEAN)))
    return out


def _nested(run: Run, body: Node, env: Env, bindings: Env) -> Val:
    """Run ``body`` (a block or an expression) on a copy of ``env`` plus ``bindings``; what it
    leaves in the variables of ``env`` joins into them."""
    saved = run.returns, run.breaks
    run.returns, run.breaks = [], []
    inner = {**env, **bindings}
    try:
        if body.type == "block":
            after = run.stmt(body, inner)
            value = reduce(join, run.returns) if run.returns else CLEAN
        else:
            value = run.expr(body, inner)
            after = inner
    finally:
        run.returns, run.breaks = saved
    if after is not None:
        for k in env:
            if k in after and k not in bindings and after[k] is not env[k]:
                env[k] = join(env[k], after[k])
    return value


def note_wrapper(wraps: dict[str, set[str]], name: str, init: Node | None, env: Env) -> None:
    """``ObjectOutputStream out = new ObjectOutputStream(bytes)``: remember that ``out`` writes
    into ``bytes`` (through nested constructors too)."""
    if init is None or init.type != "object_creation_expression":
        return
    typ = text(child(init, "type"))
    if not typ.split("<")[0].endswith(_WRAPPERS):
        return
    inner = _wrapped(init, env)
    if inner:
        wraps[name] = inner


def _wrapped(n: Node, env: Env) -> set[str]:
    args = child(n, "arguments")
    out: set[str] = set()
    for a in children(args) if args is not None else []:
        if a.type == "identifier" and text(a) in env:
            out.add(text(a))
        elif a.type == "object_creation_expression":
            out |= _wrapped(a, env)
    return out


def into_wrapped(wraps: dict[str, set[str]], changed: Env, env: Env) -> None:
    """What a call wrote into a wrapping stream (``out.writeObject(x)``) lands in the streams it
    wraps as well: ``changed`` gets their new values."""
    todo = [k for k in changed if k in wraps]
    seen: set[str] = set()
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        v = deep(changed.get(k, env.get(k, CLEAN)))
        if not v.origins:
            continue
        for w in wraps[k]:
            old = changed.get(w, env.get(w, CLEAN))
            changed[w] = mix([deep(old), v], old.typ)
            if w in wraps:
                todo.append(w)
