"""What a call into the Java library does to values: sources, sinks, sanitisers, containers,
builders, beans, numeric conversion and String methods on constants.

Pure functions over values the interpreter has evaluated; the knowledge itself (which names are
sources, sinks, sanitisers) is data in :mod:`.java_api`. A call that changes its receiver (a
list's ``add``, a builder's ``append``) returns the receiver's new value for the interpreter to
store, rather than writing into the environment itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from . import fold, guards, untrusted
from . import java_api as api
from . import judgements as judge
from .java import Node, child, text
from .untrusted import SourceKind
from .values import CLEAN, MISSING, Env, Val, as_number, assembled, deep, get_entry, mix, sanitize

# Calls that hand back the receiver itself after changing it (``sb.append(x)`` is ``sb``).
_RETURNS_RECEIVER = frozenset({"append", "insert", "replace", "reverse"})


class _Outcome(NamedTuple):
    """A call on a local variable: its result (None: not known here, go on with the generic
    handling) and the variable's new value (None: unchanged)."""

    result: Val | None
    receiver: Val | None


_NOTHING = _Outcome(None, None)


def source_of(
    name: str, static_cls: str | None, rtype: str | None
) -> tuple[SourceKind, str | None] | None:
    """The kind of outside data ``recv.name(...)`` (or ``Cls.name(...)``) reads, and its
    result's type: ``request.getParameter("id")``, ``System.getenv("X")``, ``rs.getString(1)``;
    None when the call reads none."""
    if (
        name in api.SOURCE_METHODS
        and static_cls is None
        and (api.is_request_type(rtype) or (rtype is None and name in api.SOURCE_BY_NAME_ONLY))
    ):
        return "request", api.SOURCE_METHODS[name]
    s = untrusted.call_source(name, static_cls, rtype)
    return (s.kind, s.result) if s is not None else None


def call_sinks(name: str, rtype: str | None, args: list[Val]) -> list[tuple[int, list[Val]]]:
    """The sinks a call ``name`` on a receiver of type ``rtype`` is: (CWE, the arguments that
    matter) for each."""
    return [
        (s.cwe, args if s.args is None else [args[i] for i in s.args if i < len(args)])
        for s in api.CALL_SINKS
        if name in s.methods
        and (
            any(rtype and rtype.endswith(t) for t in s.types)
            or (rtype is None and name in s.name_only)
        )
    ]


def with_taint_of(value: Val, recv: Val | None) -> Val:
    """``value`` (a folded constant) with the outside data ``recv`` holds as well."""
    if recv is None or not deep(recv).origins:
        return value
    return replace(mix([deep(recv)], value.typ), const=value.const)


def filled_arguments(name: str, recv: Val | None, arg_nodes: list[Node], env: Env) -> Env:
    """``in.read(buf)``, ``random.nextBytes(buf)``: the receiver's data lands in the argument.
    Returns the new values of the local variables passed."""
    out: Env = {}
    if name not in api.FILLS_ARGUMENT or recv is None or not deep(recv).origins:
        return out
    for a in arg_nodes:
        if a.type == "identifier" and text(a) in env:
            old = out.get(text(a), env[text(a)])
            out[text(a)] = mix([deep(old), deep(recv)], old.typ)
    return out


def _known_result(
    name: str, static_cls: str | None, rtype: str | None, args: list[Val]
) -> Val | None:
    """The result of a response stream, a sanitiser or a numeric parser; None for others."""
    if name in api.RESPONSE_STREAMS and (rtype is None or "Response" in rtype):
        return Val(typ="ResponseWriter")
    if name in api.SANITIZERS and (
        name not in ("getName", "getBaseName") or static_cls in api.FILENAME_UTILS
    ):
        return sanitize(mix([deep(a) for a in args]), api.SANITIZERS[name])
    if static_cls is not None and (static_cls, name) in api.STATIC_SANITIZERS:
        return sanitize(mix([deep(a) for a in args]), api.STATIC_SANITIZERS[static_cls, name])
    if name in api.NUMERIC_PARSERS or (name == "valueOf" and static_cls in api.NUMERIC_TYPES):
        return CLEAN
    if static_cls in api.NUMERIC_TYPES and name in ("toString", "toHexString"):
        return as_number(mix([deep(a) for a in args]))  # a number's digits (a random one stays)
    if static_cls == "Pattern" and name == "compile" and args and isinstance(args[0].const, str):
        return Val(const=args[0].const, typ="Pattern")  # the regex, for a guard to judge
    return None


def call_result(
    name: str,
    static_cls: str | None,
    rtype: str | None,
    objn: Node | None,
    recv: Val | None,
    args: list[Val],
    env: Env,
) -> tuple[Val, Env]:
    """The value of a library call once its sinks have fired, and the new values of what it
    changes (a builder it appends to, a list it adds to), keyed by :func:`receiver_path`."""
    known = _known_result(name, static_cls, rtype, args)
    if known is not None:
        return known, {}
    changed: Env = {}
    if name in ("append", "insert") and objn is not None and args:
        chained = _chained_append(objn, args, env)
        if chained is not None:
            changed[chained[0]] = chained[1]
    path = receiver_path(objn, env)
    if path is not None and "." in path and name not in api.MUTATORS:
        path = None  # a field changes only by what is known to store into it
    if recv is not None and path is not None:
        outcome = _receiver_call(name, recv, args)
        if outcome.receiver is not None:
            changed[path] = outcome.receiver
        if outcome.result is not None:
            return outcome.result, changed
    return _generic_result(name, static_cls, recv, args), changed


def receiver_path(objn: Node | None, env: Env) -> str | None:
    """Where a call's receiver lives, for its new value: a local variable (``items``), a field
    of this object (``this.items``, also written bare) or of a local object (``s.props``);
    None for anything else (a call's result, an array element)."""
    if objn is None:
        return None
    if objn.type == "identifier":
        return text(objn) if text(objn) in env else "this." + text(objn)
    if objn.type == "field_access":
        obj, fld = child(objn, "object"), text(child(objn, "field"))
        if obj is not None and obj.type == "this":
            return "this." + fld
        if obj is not None and obj.type == "identifier" and text(obj) in env:
            return text(obj) + "." + fld
    return None


def _chained_append(objn: Node, args: list[Val], env: Env) -> tuple[str, Val] | None:
    """``sb.append(a).append(b)``: the later appends land in ``sb`` as well. Returns the builder
    variable and its new value, or None."""
    root = objn
    while root.type == "method_invocation" and text(child(root, "name")) in ("append", "insert"):
        nxt = child(root, "object")
        if nxt is None:
            return None
        root = nxt
    if root is objn or root.type != "identifier" or text(root) not in env:
        return None
    var = env[text(root)]
    if var.typ in ("StringBuilder", "StringBuffer") and any(deep(a).origins for a in args):
        return text(root), assembled(mix([deep(var), *map(deep, args)], var.typ))
    return None


def _receiver_call(name: str, recv: Val, args: list[Val]) -> _Outcome:
    """Container, builder and cookie operations on a local variable whose value is ``recv``."""
    a0 = args[0].const if args else None
    if recv.elems is not None:
        el = recv.elems
        if name == "add" and len(args) == 1:
            return _Outcome(Val(const=True), replace(recv, elems=el + (args[0],)))
        if name == "add" and len(args) == 2 and isinstance(a0, int) and 0 <= a0 <= len(el):
            return _Outcome(CLEAN, replace(recv, elems=el[:a0] + (args[1],) + el[a0:]))
        if (
            name in ("get", "remove")
            and len(args) == 1
            and isinstance(a0, int)
            and not isinstance(a0, bool)
        ):
            if not 0 <= a0 < len(el):
                return _Outcome(CLEAN, None)
            removed = replace(recv, elems=el[:a0] + el[a0 + 1 :]) if name == "remove" else None
            return _Outcome(el[a0], removed)
        if name == "set" and len(args) == 2 and isinstance(a0, int) and 0 <= a0 < len(el):
            return _Outcome(el[a0], replace(recv, elems=el[:a0] + (args[1],) + el[a0 + 1 :]))
        if name == "clear":
            return _Outcome(CLEAN, replace(recv, elems=()))
    if recv.entries is not None:
        if (
            name in ("get", "getOrDefault", "remove", "getProperty")
            and args
            and isinstance(a0, str)
        ):
            got = get_entry(recv, a0)
            removed = None
            if name == "remove":
                removed = replace(recv, entries=tuple((k, v) for k, v in recv.entries if k != a0))
            if name in ("getOrDefault", "getProperty") and len(args) == 2 and got is MISSING:
                return _Outcome(args[1], removed)
            return _Outcome(got if isinstance(got, Val) else CLEAN, removed)
        if name in ("put", "setProperty", "putIfAbsent") and len(args) == 2 and isinstance(a0, str):
            rest = tuple((k, v) for k, v in recv.entries if k != a0)
            return _Outcome(CLEAN, replace(recv, entries=rest + ((a0, args[1]),)))
    if name == "setSecure" and len(args) == 1:
        return _Outcome(CLEAN, replace(recv, secure=a0 if isinstance(a0, bool) else None))
    prop = _bean_property(name, recv, args)
    if prop is not None:
        return prop
    tainted = [a for a in args if deep(a).origins]
    if tainted and not _queries(name) and recv.typ not in api.IMMUTABLE:
        # A method on a mutable object that takes tainted data taints the object
        # (StringBuilder.append, List.addAll, Properties.load ...).
        new = replace(mix([deep(recv), *map(deep, args)], recv.typ), secure=recv.secure)
        if name in api.TEXT_ASSEMBLY:
            new = assembled(new)
        return _Outcome(new if name in _RETURNS_RECEIVER else None, new)
    return _NOTHING


def _queries(name: str) -> bool:
    """Whether a method named so only reads its receiver (``get``, ``contains``, ``isEmpty``,
    ``indexOf``, ``find…``): what it is asked with does not land in the receiver."""
    return (
        name in api.NON_PROPAGATING
        or name in api.LOOKUPS
        or name.startswith(("get", "is", "has", "contains", "find", "index", "equals", "compare"))
    )


def _bean_property(name: str, recv: Val, args: list[Val]) -> _Outcome | None:
    """``x.setFoo(v)`` / ``x.getFoo()`` on a plain object: one slot per property, so a
    tainted path set on a cookie does not make its value tainted."""
    if recv.elems is not None or recv.typ in api.FRESH_MAPS or recv.typ in api.STRING_LIKE:
        return None
    props = recv.entries or ()
    if any(not k.startswith("#") for k, _ in props):
        return None  # a real map
    if name.startswith("set") and len(name) > 3 and len(args) == 1:
        return _Outcome(CLEAN, with_member(recv, _property(name[3:]), args[0]))
    getter = name[3:] if name.startswith("get") else name[2:] if name.startswith("is") else ""
    if getter and not args and recv.entries is not None:
        got = get_entry(recv, "#" + _property(getter))
        if isinstance(got, Val):
            return _Outcome(got, None)
        # The object's own data, not other properties.
        return _Outcome(Val(recv.origins, recv.safe), None)
    return None


def _property(suffix: str) -> str:
    """The property a bean accessor names: ``setValue``/``getValue`` -> ``value``."""
    return suffix[:1].lower() + suffix[1:]


def with_member(obj: Val, name: str, v: Val) -> Val:
    """``obj`` with its field or bean property ``name`` now holding ``v`` (one slot each)."""
    key = "#" + name
    rest = tuple((k, e) for k, e in obj.entries or () if k != key)
    return replace(obj, entries=rest + ((key, v),))


def slot(obj: Val, name: str) -> Val | None:
    """What field ``name`` of ``obj`` holds when this method knows it: set here
    (``holder.value = v``, a setter) or by the constructor that made it."""
    if obj.entries is None or any(not k.startswith("#") for k, _ in obj.entries):
        return None
    return next((e for k, e in obj.entries if k == "#" + name), None)


def member(obj: Val, name: str) -> Val | None:
    """What field ``name`` of ``obj`` holds: its slot when known, else the object's own data
    when it has any (a parameter: what the caller passed); None when nothing is known here."""
    known = slot(obj, name)
    if known is not None:
        return known
    return Val(obj.origins, obj.safe) if obj.origins else None


def _generic_result(name: str, static_cls: str | None, recv: Val | None, args: list[Val]) -> Val:
    """Any other call: a String method on a constant folds, a few methods return nothing the
    caller passed in, and the rest return what flows into them."""
    if recv is not None and isinstance(recv.const, str):
        c = fold.string_method(recv.const, name, [a.const for a in args])
        if c is not None:
            return Val(const=c, typ="char" if name == "charAt" else None)
    if name in api.NON_PROPAGATING:
        return CLEAN
    if recv is not None and name in api.LOOKUPS:
        # `table.get(key)`: what the table holds (or the default), not the key asked for.
        args = args[1:]
    parts = ([deep(recv)] if recv is not None else []) + [deep(a) for a in args]
    typ = api.STATIC_RESULT_TYPES.get((static_cls, name)) if static_cls else None
    out = mix(parts, typ or api.RESULT_TYPES.get(name))
    if name in api.NUMERIC_RESULTS:
        return as_number(out)
    if recv is not None and recv.typ == "Cipher" and name == "doFinal":
        return sanitize(out, frozenset({319}))  # decrypted: it did not travel in clear text
    if recv is not None and (recv.typ, name) in api.OWN_BYTES:
        return sanitize(out, frozenset({502}))
    if name in api.TEXT_ASSEMBLY:
        return assembled(out)
    if name == "replaceAll" and len(args) == 2:
        kept = judge.stripped_safe(args[0].const, args[1].const)
        if kept:
            return sanitize(out, kept)
    if name in api.REPLACERS and args and judge.strips_line_breaks(args[0].const):
        return sanitize(out, frozenset({113}))
    if name in guards.LAST_ELEMENT or (
        name == "getName" and recv is not None and recv.typ == "File"
    ):
        return sanitize(out, frozenset({22}))
    if name in guards.NORMALIZERS or (name in guards.PATH_VIEWS and recv is not None and recv.norm):
        return replace(out, norm=True)
    return out


def new_object(typ: str, args: list[Val]) -> Val:
    """``new T(args)`` for a library type: fresh containers start empty and precise."""
    if typ in api.FRESH_LISTS and not any(a.typ or a.origins for a in args):
        return Val(elems=(), typ=typ)
    if typ in api.FRESH_MAPS and not args:
        return Val(entries=(), typ=typ)
    if typ == "Cookie" and len(args) == 2:  # its name and value, as its getters read them
        whole = mix([deep(a) for a in args], typ)
        return replace(whole, entries=(("#name", args[0]), ("#value", args[1])))
    return mix([deep(a) for a in args], typ)
