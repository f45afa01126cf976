"""Guards: a normalised path checked with ``startsWith(base)``; a value checked against an
allow-list (``ALLOWED.contains(v)``) or a constant (``"asc".equals(v)``).

``base.resolve(name).normalize()`` (or ``toRealPath()``, ``File.getCanonicalPath()`` /
``getCanonicalFile()``) removes every ``..``; a following ``startsWith(base)`` then proves the
path stays under ``base``. The interpreter therefore does not judge a path construction whose
result is normalised at once (the normalised value is judged where it is used), and inside the
branch where such a check holds the path is clean for CWE-22.

A ``name.contains("..")`` check is deliberately not a guard: it leaves absolute names
(``Path.resolve("/etc/passwd")`` and ``new File(name)`` escape any base) and is often made
before the value is decoded, so a path checked only that way is still reported. Membership
in a collection the attacker does not fill, equality with a literal, or a whole-value regex
that admits no separators proves the value is one the program chose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .java import Node, child, children, text
from .values import Env, Val

NORMALIZERS = frozenset({"normalize", "toRealPath", "getCanonicalPath", "getCanonicalFile"})
# The last element of a path: a bare name, with no separator left to climb with.
LAST_ELEMENT = frozenset({"getFileName"})
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
    ``new File(d, p).getCanonicalFile()``, ``Paths.get(p).toAbsolutePath().normalize()``) or
    cut to its last element (``Paths.get(p).getFileName()``)."""
    cur, parent = n, n.parent
    while parent is not None and parent.type == "parenthesized_expression":
        cur, parent = parent, parent.parent
    while _is_receiver_of(parent, cur):
        assert parent is not None
        name = text(child(parent, "name"))
        if name in NORMALIZERS or name in LAST_ELEMENT:
            return True
        if name not in PATH_VIEWS:
            return False
        cur, parent = parent, parent.parent
    return False


Fact = tuple[str, str, Node]  # (kind, variable, the node it is checked against)
MEMBERSHIP = frozenset({"contains", "containsKey", "containsValue"})
# Static validators whose true result leaves only letters or digits (Apache Commons Lang).
_VALIDATORS = frozenset({"isAlphanumeric", "isAlpha", "isNumeric", "isDigits"})
_EQUALITY = frozenset({"equals", "equalsIgnoreCase"})


def path_checks(cond: Node | None) -> tuple[list[Fact], list[Fact]]:
    """The facts that hold when ``cond`` is true, and those that hold when it is false (through
    ``!``, ``&&``, ``||`` and parentheses): ``("under", var, base)`` for
    ``var.startsWith(base)``; ``("member", var, set)`` for ``set.contains(var)`` (an
    allow-list); ``("equal", var, other)`` for ``var.equals(other)`` either way round, for
    ``var.matches(regex)`` with a regex that admits no separators (``[a-z0-9-]{1,32}``) and
    for ``StringUtils.isAlphanumeric(var)`` and its kin."""
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
            return lt + rt, _either(lf, rf)
        if op == "||":
            return _either(lt, rt), lf + rf
        return [], []
    if t == "method_invocation":
        return _call_fact(cond), []
    return [], []


_SEPARATORS = frozenset(" ;&|'\"<>$`")


def allow_list_regex(pattern: str) -> bool:
    """Whether a whole-value regex admits only a closed set of characters: no `.` outside a
    class, no negated class, no class escape that admits spaces or symbols (\\S \\W \\D
    \\s \\p), and none of the separators a shell, a query or markup gives meaning to."""
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if pattern[i + 1 : i + 2] in ("S", "W", "D", "s", "p", "P"):
                return False
            i += 2
            continue
        if c in _SEPARATORS and (in_class or c != "|"):
            return False
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                return False
        elif c == ".":
            return False
        i += 1
    return True


def _either(a: list[Fact], b: list[Fact]) -> list[Fact]:
    """What holds when one of two conditions does: a variable each side proves to be a value
    the program chose (``"asc".equals(v) || "desc".equals(v)``)."""
    both = {v for k, v, _ in a if k != "under"} & {v for k, v, _ in b if k != "under"}
    return [f for f in a + b if f[0] != "under" and f[1] in both]


def _call_fact(cond: Node) -> list[Fact]:
    name = text(child(cond, "name"))
    obj, args = child(cond, "object"), child(cond, "arguments")
    params = children(args) if args is not None else []
    if obj is None or len(params) > 1:
        return []
    if name == "matches" and obj.type == "method_invocation" and not params:
        # `HOST.matcher(host).matches()`: a compiled allow-list regex
        matcher_args = child(obj, "arguments")
        inner = children(matcher_args) if matcher_args is not None else []
        compiled = child(obj, "object")
        if text(child(obj, "name")) == "matcher" and compiled is not None and len(inner) == 1:
            return [("pattern", text(inner[0]), compiled)] if inner[0].type == "identifier" else []
        return []
    if not params:
        return []
    if name in MEMBERSHIP and params[0].type == "identifier":
        if obj.type in ("identifier", "field_access"):
            return [("member", text(params[0]), obj)]
        return []
    if name == "matches" and obj.type == "identifier" and params[0].type == "string_literal":
        pattern = text(params[0])[1:-1].replace("\\\\", "\\")
        return [("equal", text(obj), params[0])] if allow_list_regex(pattern) else []
    if name in _VALIDATORS and obj.type == "identifier" and params[0].type == "identifier":
        return [("equal", text(params[0]), obj)]
    if name in _EQUALITY:
        if obj.type == "identifier" and params[0].type == "string_literal":
            return [("equal", text(obj), params[0])]
        if obj.type == "string_literal" and params[0].type == "identifier":
            return [("equal", text(params[0]), obj)]
        return []
    if name != "startsWith":
        return []
    while obj is not None and obj.type == "method_invocation":  # f.toPath().startsWith
        view_args = child(obj, "arguments")
        if text(child(obj, "name")) not in PATH_VIEWS or (
            view_args is not None and children(view_args)
        ):
            return []
        obj = child(obj, "object")
    if obj is not None and obj.type == "identifier":
        return [("under", text(obj), params[0])]
    return []


def confine(facts: list[Fact], env: Env, value_of: Callable[[Node], Val]) -> Env:
    """``env`` with what ``facts`` prove: a normalised path proven under a trusted base is clean
    for CWE-22; a value found in a trusted allow-list, or equal to a constant, is clean.

    ``value_of`` evaluates the node a variable is checked against; it is called only for a
    fact that matters, since reading a field may evaluate its initialiser."""
    for kind, var, other in facts:
        v = env.get(var)
        if v is None or not v.origins or (kind == "under" and not v.norm):
            continue
        if kind == "pattern":
            regex = value_of(other).const
            if isinstance(regex, str) and allow_list_regex(regex):
                env[var] = Val(typ=v.typ)
            continue
        if kind != "equal" and any(not o.is_param for o in value_of(other).origins):
            continue  # a base or a list the attacker picks proves nothing
        if kind == "under":
            env[var] = replace(v, safe=v.safe | {_PATH_CWE})
        else:
            env[var] = Val(typ=v.typ)
    return env
