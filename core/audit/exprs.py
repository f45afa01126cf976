"""Expression evaluation of the per-method interpreter (everything but calls and ``new``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from . import fold
from .java import Node, child, children, text
from .project import simple_type
from .values import CLEAN, Val, assembled, deep, join, mix

if TYPE_CHECKING:
    from .calls import CallsMixin
    from .statements import Env

_LITERALS = frozenset(
    {
        "string_literal",
        "character_literal",
        "decimal_integer_literal",
        "hex_integer_literal",
        "decimal_floating_point_literal",
        "true",
        "false",
        "octal_integer_literal",
        "binary_integer_literal",
        "null_literal",
        "text_block",
    }
)


def expr(run: CallsMixin, n: Node | None, env: Env) -> Val:
    """The abstract value of expression ``n``; assignments update ``env`` in place."""
    if n is None:
        return CLEAN
    t = n.type
    if t in _LITERALS:
        v = fold.literal(t, text(n))
        return Val(const=v, typ="char" if t == "character_literal" else None)
    if t == "identifier":
        name = text(n)
        if name in env:
            return env[name]
        return run.read_field(name)
    if t == "parenthesized_expression":
        inner = children(n)
        return expr(run, inner[0], env) if inner else CLEAN
    if t == "binary_expression":
        return _binary(run, n, env)
    if t == "unary_expression":
        v = expr(run, child(n, "operand"), env)
        op = text(child(n, "operator"))
        if op == "!" and isinstance(v.const, bool):
            return Val(const=not v.const)
        if op == "-" and isinstance(v.const, int | float) and not isinstance(v.const, bool):
            return Val(const=-v.const)
        return replace(v, const=None)
    if t == "ternary_expression":
        c = expr(run, child(n, "condition"), env)
        if c.const is True:
            return expr(run, child(n, "consequence"), env)
        if c.const is False:
            return expr(run, child(n, "alternative"), env)
        return join(
            expr(run, child(n, "consequence"), env), expr(run, child(n, "alternative"), env)
        )
    if t == "assignment_expression":
        return _assign(run, n, env)
    if t == "cast_expression":
        v = expr(run, child(n, "value"), env)
        typ = simple_type(text(child(n, "type")))
        if typ in ("int", "long", "short", "byte", "double", "float", "boolean"):
            return Val(const=v.const if isinstance(v.const, int | float) else None)
        return v.with_type(typ)
    if t == "method_invocation":
        return run.call(n, env)
    if t == "object_creation_expression":
        return run.new(n, env)
    if t in ("array_creation_expression", "array_initializer"):
        init = child(n, "value") if t == "array_creation_expression" else n
        if init is None:
            for d in children(n):
                expr(run, d, env)
            return Val(elems=None, typ=simple_type(text(child(n, "type"))) + "[]")
        return Val(elems=tuple(expr(run, e, env) for e in children(init)))
    if t == "array_access":
        arr = expr(run, child(n, "array"), env)
        idx = expr(run, child(n, "index"), env)
        i = idx.const
        if arr.elems is not None and isinstance(i, int) and 0 <= i < len(arr.elems):
            return arr.elems[i]
        return deep(arr)
    if t == "field_access":
        return _field_access(run, n, env)
    if t == "update_expression":
        target = children(n)[0] if children(n) else None
        if target is not None and target.type == "identifier" and text(target) in env:
            env[text(target)] = replace(env[text(target)], const=None)
        return CLEAN
    if t in ("this",):
        return Val(typ=run.cls.name)
    if t in (
        "lambda_expression",
        "method_reference",
        "class_literal",
        "instanceof_expression",
        "switch_expression",
        "super",
    ):
        return CLEAN
    # Unknown expression kinds: whatever flows into them flows out.
    return mix([expr(run, c, env) for c in children(n)])


def _binary(run: CallsMixin, n: Node, env: Env) -> Val:
    op = text(child(n, "operator"))
    a = expr(run, child(n, "left"), env)
    if op in ("&&", "||") and isinstance(a.const, bool) and a.const == (op == "||"):
        return Val(const=a.const)  # short-circuit: the right side never runs
    b = expr(run, child(n, "right"), env)
    c = fold.binary(op, a.const, b.const, char_a=a.typ == "char", char_b=b.typ == "char")
    if op in ("==", "!=", "<", ">", "<=", ">=", "&&", "||", "instanceof"):
        return Val(const=c)  # a boolean carries no text
    typ = "String" if isinstance(c, str) else None
    if op == "+" and c is None and (a.typ == "String" or b.typ == "String"):
        typ = "String"
    m = mix([deep(a), deep(b)], typ)
    if op == "+" and c is None:
        m = assembled(m)
    return replace(m, const=c)


def _assign(run: CallsMixin, n: Node, env: Env) -> Val:
    left, right = child(n, "left"), child(n, "right")
    op = text(child(n, "operator"))
    v = expr(run, right, env)
    if left is None:
        return v
    if op != "=":
        old = expr(run, left, env)
        c = fold.binary(op[:-1], old.const, v.const)
        v = replace(mix([deep(old), deep(v)], old.typ), const=c)
        if op == "+=" and c is None:
            v = assembled(v)
    if left.type == "identifier":
        name = text(left)
        if name in env:
            env[name] = v.with_type(env[name].typ)
        else:
            run.write_field(name, v)
    elif left.type == "field_access":
        obj = child(left, "object")
        if obj is not None and obj.type == "this":
            run.write_field(text(child(left, "field")), v)
    elif left.type == "array_access":
        arr_node = child(left, "array")
        if arr_node is not None and arr_node.type == "identifier" and text(arr_node) in env:
            name = text(arr_node)
            arr = env[name]
            i = expr(run, child(left, "index"), env).const
            if arr.elems is not None and isinstance(i, int) and 0 <= i < len(arr.elems):
                elems = arr.elems[:i] + (v,) + arr.elems[i + 1 :]
                env[name] = replace(arr, elems=elems)
            else:
                env[name] = mix([deep(arr), v], arr.typ)
    return v


def _field_access(run: CallsMixin, n: Node, env: Env) -> Val:
    obj, fld = child(n, "object"), text(child(n, "field"))
    if obj is None:
        return CLEAN
    if obj.type == "this":
        return run.read_field(fld)
    cls = run.static_ref(obj, env)
    if cls is not None:
        return run.read_static(cls, fld)
    if fld == "length":
        expr(run, obj, env)
        return CLEAN
    return deep(expr(run, obj, env))
