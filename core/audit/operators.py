"""What Java's operators do to abstract values: literals, unary and binary operators, compound
assignment, casts and array slots.

Pure functions of values already evaluated; the interpreter evaluates the operands (in Java's
order) and hands them here. Constants fold through :mod:`.fold`; taint flows through
:func:`.values.mix`.
"""

from __future__ import annotations

from dataclasses import replace

from . import fold
from .values import RANDOM, Val, assembled, deep, mix

_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||", "instanceof"})
_PRIMITIVE_CASTS = frozenset({"int", "long", "short", "byte", "double", "float", "boolean"})


def literal(node_type: str, src: str) -> Val:
    """The value of a literal node of type ``node_type`` with source text ``src``."""
    return Val(
        const=fold.literal(node_type, src),
        typ="char" if node_type == "character_literal" else None,
    )


def unary(op: str, v: Val) -> Val:
    """``op v``: ``!`` and ``-`` fold; anything else keeps the taint and drops the constant."""
    if op == "!" and isinstance(v.const, bool):
        return Val(const=not v.const)
    if op == "-" and isinstance(v.const, int | float) and not isinstance(v.const, bool):
        return Val(const=-v.const)
    return replace(v, const=None)


def short_circuit(op: str, left: Val) -> Val | None:
    """The value of ``left && …`` / ``left || …`` when the right side never runs, else None."""
    if op in ("&&", "||") and isinstance(left.const, bool) and left.const == (op == "||"):
        return Val(const=left.const)
    return None


def binary(op: str, a: Val, b: Val) -> Val:
    """``a op b`` once both sides are evaluated."""
    c = fold.binary(op, a.const, b.const, char_a=a.typ == "char", char_b=b.typ == "char")
    if op in _COMPARISONS:
        return Val(const=c)  # a boolean carries no text
    typ = "String" if isinstance(c, str) else None
    if op == "+" and c is None and (a.typ == "String" or b.typ == "String"):
        typ = "String"
    m = mix([deep(a), deep(b)], typ)
    if op == "+" and c is None:
        m = assembled(m)
    return replace(m, const=c)


def compound(op: str, old: Val, v: Val) -> Val:
    """The value ``x op= v`` stores, ``old`` being the value of ``x`` before it."""
    c = fold.binary(op[:-1], old.const, v.const)
    out = replace(mix([deep(old), deep(v)], old.typ), const=c)
    return assembled(out) if op == "+=" and c is None else out


def cast(v: Val, typ: str) -> Val:
    """``(typ) v``: a primitive keeps only a numeric constant (no text survives it) and a
    predictable random value's origin (``(int) (Math.random() * n)`` is as predictable)."""
    if typ in _PRIMITIVE_CASTS:
        random = frozenset(o for o in deep(v).origins if o.kind == RANDOM)
        return Val(random, const=v.const if isinstance(v.const, int | float) else None)
    return v.with_type(typ)


def element(arr: Val, index: object) -> Val:
    """``arr[index]``: the precise slot when both are known, else all of the array's taint."""
    if arr.elems is not None and isinstance(index, int) and 0 <= index < len(arr.elems):
        return arr.elems[index]
    return deep(arr)


def store(arr: Val, index: object, v: Val) -> Val:
    """The array after ``arr[index] = v``."""
    if arr.elems is not None and isinstance(index, int) and 0 <= index < len(arr.elems):
        return replace(arr, elems=arr.elems[:index] + (v,) + arr.elems[index + 1 :])
    return mix([deep(arr), v], arr.typ)
