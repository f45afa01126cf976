"""Path containment guards: a normalised path checked with ``startsWith(base)``.

``base.resolve(name).normalize()`` (or ``toRealPath()``, ``File.getCanonicalPath()`` /
``getCanonicalFile()``) removes every ``..``; a following ``startsWith(base)`` then proves the
path stays under ``base``. The interpreter therefore does not judge a path construction whose
result is normalised at once (the normalised value is judged where it is used), and inside the
branch where such a check holds the path is clean for CWE-22.

A ``name.contains("..")`` check is deliberately not a guard: it leaves absolute names
(``Path.resolve("/etc/passwd")`` and ``new File(name)`` escape any base) and is often made
before the value is decoded, so a path checked only that way is still reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .java import Node, child, children, text
from .values import Env, Val

NORMALIZERS = frozenset({"normalize", "toRealPath", "getCanonicalPath", "getCanonicalFile"})
# Conversions that keep a normalised path normalised (and may sit before the normaliser).
PATH_VIEWS = frozenset({"toAbsolutePath", "toPath", "toFile", "getAbsoluteFile", "toString"})
_PATH_CWE = 22


def _is_receiver_of(parent: Node | None, node: Node) -> bool:
    if parent is None or parent.type != "method_invocation":
        return False
    obj = child(parent, "object")
    return obj is not None and obj.id == node.id


def normalised_later(n: Node) -> bool:
    """Whether the value built at ``n`` is normalised at once (``x.resolve(p).normalize()``,
    ``new File(d, p).getCanonicalFile()``, ``Paths.get(p).toAbsolutePath().normalize()``)."""
    cur, parent = n, n.parent
    while parent is not None and parent.type == "parenthesized_expression":
        cur, parent = parent, parent.parent
    while _is_receiver_of(parent, cur):
        assert parent is not None
        name = text(child(parent, "name"))
        if name in NORMALIZERS:
            return True
        if name not in PATH_VIEWS:
            return False
        cur, parent = parent, parent.parent
    return False


def path_checks(cond: Node | None) -> tuple[list[tuple[str, Node]], list[tuple[str, Node]]]:
    """``(var, base)`` pairs of ``var.startsWith(base)`` facts that hold when ``cond`` is true,
    and those that hold when it is false (through ``!``, ``&&``, ``||`` and parentheses)."""
    if cond is None:
        return [], []
    t = cond.type
    if t in ("parenthesized_expression", "condition"):
        inner = children(cond)
        return path_checks(inner[0]) if len(inner) == 1 else ([], [])
    if t == "unary_expression" and text(child(cond, "operator")) == "!":
        on_true, on_false = path_checks(child(cond, "operand"))
        return on_false, on_true
    if t == "binary_expression":
        op = text(child(cond, "operator"))
        lt, lf = path_checks(child(cond, "left"))
        rt, rf = path_checks(child(cond, "right"))
        if op == "&&":
            return lt + rt, []
        if op == "||":
            return [], lf + rf
        return [], []
    if t == "method_invocation" and text(child(cond, "name")) == "startsWith":
        obj, args = child(cond, "object"), child(cond, "arguments")
        params = children(args) if args is not None else []
        while obj is not None and obj.type == "method_invocation":  # f.toPath().startsWith
            view_args = child(obj, "arguments")
            if text(child(obj, "name")) not in PATH_VIEWS or (
                view_args is not None and children(view_args)
            ):
                return [], []
            obj = child(obj, "object")
        if obj is not None and obj.type == "identifier" and len(params) == 1:
            return [(text(obj), params[0])], []
    return [], []


def confine(facts: list[tuple[str, Node]], env: Env, read_field: Callable[[str], Val]) -> Env:
    """``env`` with each normalised path proven under a trusted base marked clean for CWE-22.

    ``read_field`` gives the value of a base that is not a local variable; it is called only
    for a base that matters, since reading a field may evaluate its initialiser."""
    for var, base in facts:
        v = env.get(var)
        if v is None or not v.norm or not v.origins:
            continue
        if base.type == "identifier":
            b = env[text(base)] if text(base) in env else read_field(text(base))
            if any(not o.is_param for o in b.origins):
                continue  # a base the attacker picks proves nothing
        env[var] = replace(v, safe=v.safe | {_PATH_CWE})
    return env
