"""Constant folding: Java literals, arithmetic, comparisons and String methods on constants.

Folding lets the engine drop branches whose condition is a compile-time fact
(``if (7 * 18 + num > 200)`` with ``num`` a known constant) and read precise list/map slots.
"""

from __future__ import annotations

import re

_ESC = re.compile(r"\\(u[0-9a-fA-F]{4}|[0-7]{1,3}|.)", re.S)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "s": " ", "0": "\0"}


def _unescape(body: str) -> str:
    def rep(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "u":
            return chr(int(e[1:], 16))
        if e.isdigit():
            return chr(int(e, 8))
        return _SIMPLE.get(e, e)

    return _ESC.sub(rep, body)


def literal(kind: str, src: str) -> object:
    """The constant of a literal node of type ``kind`` with source text ``src``, or None."""
    try:
        if kind == "string_literal":
            return (
                _unescape(src[1:-1]) if src.startswith('"') and not src.startswith('"""') else None
            )
        if kind == "character_literal":
            return _unescape(src[1:-1])
        if kind == "decimal_integer_literal":
            return int(src.rstrip("lL").replace("_", ""))
        if kind == "hex_integer_literal":
            return int(src.rstrip("lL").replace("_", ""), 16)
        if kind == "decimal_floating_point_literal":
            return float(src.rstrip("fFdD").replace("_", ""))
        if kind == "true":
            return True
        if kind == "false":
            return False
    except ValueError:
        return None
    return None


def _num(v: object) -> int | float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return v
    if isinstance(v, str) and len(v) == 1:  # a char in arithmetic / comparison
        return ord(v)
    return None


def _to_str(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def binary(op: str, a: object, b: object, *, char_a: bool = False, char_b: bool = False) -> object:
    """Fold ``a op b``; None when unknown. ``char_*`` marks a one-letter str as a Java char."""
    if a is None or b is None:
        return None
    if op == "+" and (isinstance(a, str) and not char_a or isinstance(b, str) and not char_b):
        return _to_str(a) + _to_str(b)
    if op in ("&&", "||", "&", "|", "^") and isinstance(a, bool) and isinstance(b, bool):
        return {"&&": a and b, "||": a or b, "&": a and b, "|": a or b, "^": a != b}[op]
    if op in ("==", "!=") and isinstance(a, bool) and isinstance(b, bool):
        return (a == b) == (op == "==")
    x, y = _num(a), _num(b)
    if x is None or y is None:
        return None
    both_int = isinstance(x, int) and isinstance(y, int)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op in ("/", "%"):
        if y == 0:
            return None
        if both_int:
            q = abs(int(x)) // abs(int(y)) * (1 if (x >= 0) == (y >= 0) else -1)
            return q if op == "/" else int(x) - q * int(y)
        return x / y if op == "/" else x % y
    cmp = {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}
    return cmp.get(op)


def string_method(recv: str, name: str, args: list[object]) -> object:
    """Fold a String method called on a constant; None when unknown."""
    try:
        if name == "charAt" and len(args) == 1 and isinstance(args[0], int):
            return recv[args[0]] if 0 <= args[0] < len(recv) else None
        if name == "length" and not args:
            return len(recv)
        if name in ("equals", "contentEquals") and len(args) == 1 and isinstance(args[0], str):
            return recv == args[0]
        if name == "equalsIgnoreCase" and len(args) == 1 and isinstance(args[0], str):
            return recv.lower() == args[0].lower()
        if name == "substring" and args and all(isinstance(a, int) for a in args):
            ints = [a for a in args if isinstance(a, int)]
            begin, end = ints[0], ints[1] if len(ints) == 2 else len(recv)
            # Java throws on indices Python would clamp: leave those unfolded.
            return recv[begin:end] if 0 <= begin <= end <= len(recv) else None
        if name == "toUpperCase" and not args:
            return recv.upper()
        if name == "toLowerCase" and not args:
            return recv.lower()
        if name in ("trim", "strip", "toString", "intern") and not args:
            return recv.strip() if name in ("trim", "strip") else recv
        if name == "concat" and len(args) == 1 and isinstance(args[0], str):
            return recv + args[0]
        if name == "isEmpty" and not args:
            return not recv
        if (
            name in ("startsWith", "endsWith", "contains")
            and len(args) == 1
            and isinstance(args[0], str)
        ):
            return {
                "startsWith": recv.startswith,
                "endsWith": recv.endswith,
                "contains": recv.__contains__,
            }[name](args[0])
        if name == "indexOf" and len(args) == 1 and isinstance(args[0], str):
            return recv.find(args[0])
    except (IndexError, TypeError):
        return None
    return None
