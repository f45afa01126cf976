"""Calls and object creation of the per-method interpreter: sources, sinks, summaries, library
semantics (containers, builders, encoders, numeric conversion) and field access."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from . import checks, fold, guards
from . import java_api as api
from .exprs import expr
from .java import Node, child, children, col_of, line_of, text
from .project import ClassInfo, MethodInfo, find_methods, simple_type
from .values import (
    _MISSING,
    CLEAN,
    INJECTION_KINDS,
    RANDOM_KINDS,
    Val,
    assembled,
    deep,
    get_entry,
    join,
    mix,
    reaching,
    sanitize,
    without_params,
)

if TYPE_CHECKING:
    from .scan import Analyzer
    from .statements import Env

_QUALIFIED = re.compile(r"^[a-z_$][\w$]*(\.[a-z_$][\w$]*)*\.([A-Z][\w$]*)$")


def kinds_for(cwe: int) -> frozenset[str]:
    return RANDOM_KINDS if cwe == 330 else INJECTION_KINDS


class CallsMixin:
    an: Analyzer
    m: MethodInfo
    cls: ClassInfo
    fidx: int
    param_sinks: set[tuple[int, int, int, int, int]]  # (parameter, cwe, file, line, column)

    # --- names, fields ---------------------------------------------------------------------
    def _field_owner(self, name: str) -> ClassInfo | None:
        c: ClassInfo | None = self.cls
        while c is not None:
            if name in c.fields:
                return c
            c = c.outer
        return None

    def static_ref(self, n: Node, env: Env) -> str | None:
        """The simple class name when ``n`` names a class (``Math``, ``java.net.URLDecoder``)."""
        if n.type == "identifier":
            name = text(n)
            if name in env or self._field_owner(name) is not None:
                return None
            return name if name[:1].isupper() else None
        if n.type in ("field_access", "scoped_identifier"):
            m = _QUALIFIED.match("".join(text(n).split()))
            if m and m.group(0).split(".")[0] not in env:
                return m.group(2)
        return None

    def _field_val(self, owner: ClassInfo, name: str) -> Val:
        key = (owner.file_idx, owner.node.start_byte, name)
        if key not in self.an.fields:
            self.an.fields[key] = Val(typ=owner.fields.get(name))  # guards recursion
            init = owner.field_inits.get(name)
            if init is not None:
                v = expr(self, init, {})
                self.an.fields[key] = v.with_type(owner.fields.get(name))
        return self.an.fields[key]

    def read_field(self, name: str) -> Val:
        owner = self._field_owner(name)
        return self._field_val(owner, name) if owner is not None else CLEAN

    def write_field(self, name: str, v: Val) -> None:
        owner = self._field_owner(name)
        if owner is not None:
            key = (owner.file_idx, owner.node.start_byte, name)
            old = self._field_val(owner, name)
            self.an.fields[key] = join(old, without_params(v)).with_type(owner.fields.get(name))

    def read_static(self, cls_name: str, fld: str) -> Val:
        for c in self.an.project.classes(cls_name, self.cls):
            if fld in c.fields:
                return self._field_val(c, fld)
        return CLEAN

    # --- sinks -----------------------------------------------------------------------------
    def sink(
        self, n: Node, cwe: int, vals: list[Val], via: tuple[int, int, int] | None = None
    ) -> None:
        """Request data in ``vals`` is a finding; a parameter becomes a summary fact; text
        assembled from a parameter at a query sink is a low-confidence structural finding."""
        if cwe == 22 and via is None and guards.normalised_later(n):
            return  # a path normalised at once is judged where it is used
        cwes = [cwe]
        if self.an.weak_random == "flow" and cwe in api.RANDOM_SINK_CWES:
            cwes.append(330)
        for c in cwes:
            kinds = kinds_for(c)
            tainted = False
            built: list[int] = []
            for v in vals:
                built_here = deep(v).built
                for o in reaching(v, c, kinds):
                    if o[0] == "P":
                        where = via or (self.fidx, line_of(n), col_of(n))
                        self.param_sinks.add((o[2], c, *where))
                        if c in api.STRUCTURAL_CWES and o in built_here and self._texty(o[2]):
                            built.append(o[2])
                    else:
                        tainted = True
                        self.an.report(self.fidx, n, c, o, via)
            if built and not tainted:
                self.an.report_built(self.fidx, n, c, self.m, min(built), via)

    def _texty(self, i: int) -> bool:
        """Whether parameter ``i`` may carry text (not a number or boolean)."""
        return i < len(self.m.params) and self.m.params[i][1] not in api.NON_TEXT_TYPES

    # --- calls -----------------------------------------------------------------------------
    def call(self, n: Node, env: Env) -> Val:
        name = text(child(n, "name"))
        objn = child(n, "object")
        argn = child(n, "arguments")
        args = [expr(self, a, env) for a in children(argn)] if argn is not None else []
        static_cls: str | None = None
        recv: Val | None = None
        if objn is None or objn.type == "this":
            cands = self._own_methods(name, len(args))
            rtype: str | None = self.cls.name
        else:
            static_cls = self.static_ref(objn, env)
            if static_cls is None:
                recv = expr(self, objn, env)
            rtype = static_cls or (recv.typ if recv is not None else None)
            cands = []
            if rtype and rtype in self.an.project.by_name:
                cands = find_methods(
                    self.an.project.with_subtypes(rtype, self.cls), name, len(args)
                )
        if cands:
            return self.apply(n, best_overloads(cands, args), args, recv)
        if name in api.FILLS_ARGUMENT and recv is not None and deep(recv).origins:
            # in.read(buf), random.nextBytes(buf): the receiver's data lands in the argument.
            for a in children(argn) if argn is not None else []:
                if a.type == "identifier" and text(a) in env:
                    env[text(a)] = mix([deep(env[text(a)]), deep(recv)], env[text(a)].typ)
        if (
            name in api.SOURCE_METHODS
            and static_cls is None
            and (api.is_request_type(rtype) or (rtype is None and name in api.SOURCE_BY_NAME_ONLY))
        ):
            return Val(frozenset({("S", self.fidx, line_of(n))}), typ=api.SOURCE_METHODS[name])
        special = checks.check_call(self, n, name, static_cls, rtype, recv, args)
        if special is not None:
            return special
        for s in api.CALL_SINKS:
            if name in s.methods and (
                any(rtype and rtype.endswith(t) for t in s.types)
                or (rtype is None and name in s.name_only)
            ):
                self.sink(
                    n, s.cwe, args if s.args is None else [args[i] for i in s.args if i < len(args)]
                )
        if name in api.RESPONSE_STREAMS and (rtype is None or "Response" in rtype):
            return Val(typ="ResponseWriter")
        if name in api.SANITIZERS and (
            name not in ("getName", "getBaseName") or static_cls in api.FILENAME_UTILS
        ):
            return sanitize(mix([deep(a) for a in args]), api.SANITIZERS[name])
        if name in api.NUMERIC_PARSERS or (name == "valueOf" and static_cls in api.NUMERIC_TYPES):
            return CLEAN
        if name in ("append", "insert") and objn is not None and args:
            self._chained_append(objn, args, env)
        if (
            recv is not None
            and objn is not None
            and objn.type == "identifier"
            and text(objn) in env
        ):
            out = self._local_receiver(text(objn), name, recv, args, env)
            if out is not None:
                return out
        if recv is not None and isinstance(recv.const, str):
            c = fold.string_method(recv.const, name, [a.const for a in args])
            if c is not None:
                return Val(const=c, typ="char" if name == "charAt" else None)
        if name in api.NON_PROPAGATING:
            return CLEAN
        parts = ([deep(recv)] if recv is not None else []) + [deep(a) for a in args]
        typ = api.STATIC_RESULT_TYPES.get((static_cls, name)) if static_cls else None
        out = mix(parts, typ or api.RESULT_TYPES.get(name))
        if name in api.TEXT_ASSEMBLY:
            return assembled(out)
        if name in guards.NORMALIZERS or (
            name in guards.PATH_VIEWS and recv is not None and recv.norm
        ):
            return replace(out, norm=True)
        return out

    @staticmethod
    def _chained_append(objn: Node, args: list[Val], env: Env) -> None:
        """``sb.append(a).append(b)``: the later appends land in ``sb`` as well."""
        root = objn
        while root.type == "method_invocation" and text(child(root, "name")) in (
            "append",
            "insert",
        ):
            nxt = child(root, "object")
            if nxt is None:
                return
            root = nxt
        if root is objn or root.type != "identifier" or text(root) not in env:
            return
        var = text(root)
        if env[var].typ in ("StringBuilder", "StringBuffer") and any(deep(a).origins for a in args):
            env[var] = assembled(mix([deep(env[var]), *map(deep, args)], env[var].typ))

    def _own_methods(self, name: str, arity: int) -> list[MethodInfo]:
        c: ClassInfo | None = self.cls
        while c is not None:
            found = find_methods(self.an.project.with_subtypes(c.name, c), name, arity)
            found = [f for f in found if f.cls is c] or found
            if found:
                return found
            c = c.outer
        return []

    def _local_receiver(
        self, var: str, name: str, recv: Val, args: list[Val], env: Env
    ) -> Val | None:
        """Container, builder and cookie operations on a local variable."""
        a0 = args[0].const if args else None
        if recv.elems is not None:
            el = recv.elems
            if name == "add" and len(args) == 1:
                env[var] = replace(recv, elems=el + (args[0],))
                return Val(const=True)
            if name == "add" and len(args) == 2 and isinstance(a0, int) and 0 <= a0 <= len(el):
                env[var] = replace(recv, elems=el[:a0] + (args[1],) + el[a0:])
                return CLEAN
            if (
                name in ("get", "remove")
                and len(args) == 1
                and isinstance(a0, int)
                and not isinstance(a0, bool)
            ):
                if not 0 <= a0 < len(el):
                    return CLEAN
                if name == "remove":
                    env[var] = replace(recv, elems=el[:a0] + el[a0 + 1 :])
                return el[a0]
            if name == "set" and len(args) == 2 and isinstance(a0, int) and 0 <= a0 < len(el):
                env[var] = replace(recv, elems=el[:a0] + (args[1],) + el[a0 + 1 :])
                return el[a0]
            if name == "clear":
                env[var] = replace(recv, elems=())
                return CLEAN
        if recv.entries is not None:
            if (
                name in ("get", "getOrDefault", "remove", "getProperty")
                and args
                and isinstance(a0, str)
            ):
                got = get_entry(recv, a0)
                val = got if isinstance(got, Val) else CLEAN
                if name == "remove":
                    env[var] = replace(
                        recv, entries=tuple((k, v) for k, v in recv.entries if k != a0)
                    )
                if name in ("getOrDefault", "getProperty") and len(args) == 2 and got is _MISSING:
                    return args[1]
                return val if got is not _MISSING else CLEAN
            if (
                name in ("put", "setProperty", "putIfAbsent")
                and len(args) == 2
                and isinstance(a0, str)
            ):
                rest = tuple((k, v) for k, v in recv.entries if k != a0)
                env[var] = replace(recv, entries=rest + ((a0, args[1]),))
                return CLEAN
        if name == "setSecure" and len(args) == 1:
            env[var] = replace(recv, secure=a0 if isinstance(a0, bool) else None)
            return CLEAN
        prop = self._bean_property(var, name, recv, args, env)
        if prop is not None:
            return prop
        tainted = [a for a in args if deep(a).origins]
        if tainted and name not in api.NON_PROPAGATING and recv.typ not in api.IMMUTABLE:
            # A method on a mutable object that takes tainted data taints the object
            # (StringBuilder.append, List.addAll, Properties.load ...).
            env[var] = replace(mix([deep(recv), *map(deep, args)], recv.typ), secure=recv.secure)
            if name in api.TEXT_ASSEMBLY:
                env[var] = assembled(env[var])
            if name in ("append", "insert", "replace", "reverse"):
                return env[var]
        return None

    @staticmethod
    def _bean_property(var: str, name: str, recv: Val, args: list[Val], env: Env) -> Val | None:
        """``x.setFoo(v)`` / ``x.getFoo()`` on a plain object: one slot per property, so a
        tainted path set on a cookie does not make its value tainted."""
        if recv.elems is not None or recv.typ in api.FRESH_MAPS or recv.typ in api.STRING_LIKE:
            return None
        props = recv.entries or ()
        if any(not k.startswith("#") for k, _ in props):
            return None  # a real map
        if name.startswith("set") and len(name) > 3 and len(args) == 1:
            key = "#" + name[3:]
            rest = tuple((k, v) for k, v in props if k != key)
            env[var] = replace(recv, entries=rest + ((key, args[0]),))
            return CLEAN
        getter = name[3:] if name.startswith("get") else name[2:] if name.startswith("is") else ""
        if getter and not args and recv.entries is not None:
            got = get_entry(recv, "#" + getter)
            if isinstance(got, Val):
                return got
            return Val(recv.origins, recv.safe)  # the object's own data, not other properties
        return None

    def apply(self, n: Node, cands: list[MethodInfo], args: list[Val], recv: Val | None) -> Val:
        """The call's result from the callees' summaries; their parameter sinks fire here."""
        out: Val | None = None
        for m in cands:
            s = self.an.summary(m)
            if s is None:  # recursion: assume the arguments flow through
                v = mix([deep(a) for a in args], m.ret)
            else:
                own = frozenset(o for o in s.ret.origins if o[0] != "P")
                parts = [Val(own, s.ret.safe, built=s.ret.built & own)]
                for o in s.ret.origins:
                    if o[0] == "P":
                        arg = self._arg(args, o[2], m)
                        parts.append(assembled(arg) if o in s.ret.built else arg)
                v = mix(parts, m.ret)
                if v.origins and s.ret.safe:
                    v = replace(v, safe=v.safe | s.ret.safe)
                if not v.origins:
                    v = Val(const=s.ret.const, typ=m.ret)
                for i, cwe, sf, sl, sc in s.param_sinks:
                    self.sink(n, cwe, [self._arg(args, i, m)], via=(sf, sl, sc))
            out = v if out is None else join(out, v)
        return out if out is not None else CLEAN

    @staticmethod
    def _arg(args: list[Val], i: int, m: MethodInfo) -> Val:
        if m.varargs and i == len(m.params) - 1:
            return mix([deep(a) for a in args[i:]])
        return deep(args[i]) if i < len(args) else CLEAN

    # --- object creation -------------------------------------------------------------------
    def new(self, n: Node, env: Env) -> Val:
        typ = simple_type(text(child(n, "type")))
        argn = child(n, "arguments")
        args = [expr(self, a, env) for a in children(argn)] if argn is not None else []
        classes = self.an.project.classes(typ, self.cls)
        if classes:
            ctors = find_methods(classes, "<init>", len(args))
            if ctors:
                self.apply(n, best_overloads(ctors, args), args, None)
            return Val(mix([deep(a) for a in args]).origins, typ=typ)
        if typ in api.CTOR_SINKS:
            self.sink(n, api.CTOR_SINKS[typ], args)
        if typ == "Random":
            return checks.random_value(self, n)
        if typ in api.FRESH_LISTS and not any(a.typ or a.origins for a in args):
            return Val(elems=(), typ=typ)
        if typ in api.FRESH_MAPS and not args:
            return Val(entries=(), typ=typ)
        return mix([deep(a) for a in args], typ)


def best_overloads(cands: list[MethodInfo], args: list[Val]) -> list[MethodInfo]:
    """Among overloads of one arity, keep those whose parameter types match the most known
    argument types (the engine has no classpath, so this is a ranking, not Java's rules)."""
    if len(cands) < 2:
        return cands

    def score(m: MethodInfo) -> int:
        return sum(
            1
            for (_, ptype, _), a in zip(m.params, args, strict=False)
            if a.typ is not None and a.typ == ptype
        )

    best = max(score(m) for m in cands)
    return [m for m in cands if score(m) == best]
