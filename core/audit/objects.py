"""Objects of the audited project: their fields, as one method sees them.

A field has one value for the whole run (:meth:`.scan.Analyzer.field`, shared by every method).
On top of that, a method keeps *slots* for the objects it holds in local variables: what a
constructor stores into the object's fields (its summary's parameter-to-field facts), what a
setter stores, what ``obj.f = v`` assigns. A getter on such an object, or ``obj.f``, reads the
slot, so two orders of one class, one with outside data and one with a constant, stay apart.
A parameter object's field is whatever the caller passed in it; only an object the method knows
nothing of falls back on the field's run-wide value. Functions over the interpreter
(:class:`.closures.Run`), kept apart from its statement and expression walk.
"""

from __future__ import annotations

from dataclasses import replace

from . import java_api as api
from . import library, untrusted
from .closures import Run
from .java import Node, child, line_of, text
from .project import ClassInfo, MethodInfo, best_overloads, named_class
from .scan import Analyzer
from .summary import Summary, argument
from .values import CLEAN, Env, Origin, Val, as_number, deep, mix


def field_access(run: Run, n: Node, env: Env) -> Val:
    """``obj.f``, ``this.f``, ``Cls.F`` (a static field, or a source such as ``System.in``)."""
    obj, fld = child(n, "object"), text(child(n, "field"))
    if obj is None:
        return CLEAN
    if obj.type == "this":
        return run.read_field(fld)
    cls = named_class(obj, run.cls, env)
    if cls is not None:
        kind = untrusted.FIELD_SOURCES.get((cls, fld))
        if kind is not None:
            return Val(frozenset({Origin.source(kind, run.fidx, line_of(n))}))
        return run.an.static_field(cls, fld, run.cls, run.expr)
    v = run.expr(obj, env)
    if fld == "length":
        return CLEAN
    known = library.member(v, fld)
    if known is not None:
        return known
    owner = field_of(run, v.typ, fld)
    if owner is not None and not deep(v).origins:
        return run.an.field(owner, fld, run.expr)  # an object this method knows nothing of
    return deep(v)


def set_member(run: Run, var: str, fld: str, v: Val, env: Env) -> None:
    """``holder.value = v``: the object's slot now holds ``v``; so may the class's field, which
    its own methods (a getter) read."""
    env[var] = library.with_member(env[var], fld, v)
    owner = field_of(run, env[var].typ, fld)
    if owner is not None:
        run.store(owner, fld, v)


def update(run: Run, changed: Env, env: Env) -> None:
    """Store what a call changed (keyed as :func:`.library.receiver_path` names it): a local
    variable, a field of this object, or a field of a local object."""
    for key, v in changed.items():
        head, _, fld = key.partition(".")
        if not fld:
            env[key] = v
        elif head == "this":
            run.write_field(fld, v)
        else:
            set_member(run, head, fld, v, env)


def field_of(run: Run, typ: str | None, name: str) -> ClassInfo | None:
    """The project class of type ``typ`` that declares field ``name``."""
    for c in run.an.project.classes(typ, run.cls) if typ else []:
        if name in c.fields:
            return c
    return None


def made_here(an: Analyzer, init: Node | None, v: Val) -> bool:
    """Whether ``init`` creates an object of a project class: its value keeps that class, not
    the declared supertype, so calls on it run that class's methods only."""
    return (
        init is not None
        and init.type == "object_creation_expression"
        and v.typ is not None
        and v.typ in an.project.by_name
    )


def on_holder(m: MethodInfo, s: Summary, args: list[Val], env: Env, holder: str) -> Val | None:
    """A project method run on local object ``holder``: the slots its summary sets, and the
    value of the slot it returns (a getter) when the object's data is known here."""
    env[holder], _ = _filled(env[holder], m, s, args)
    got = library.member(env[holder], s.ret_field) if s.ret_field else None
    return as_number(got) if got is not None and m.ret in api.NON_TEXT_TYPES else got


def _filled(obj: Val, m: MethodInfo, s: Summary, args: list[Val]) -> tuple[Val, set[int]]:
    """``obj`` with the slots a call of ``m`` (summary ``s``) fills from ``args``: the fields
    of ``m``'s own class its parameters are stored in; and those parameters' positions."""
    own = (m.cls.file_idx, m.cls.node.start_byte)
    stored: set[int] = set()
    for pf in s.param_fields:
        if pf.owner == own:
            obj = library.with_member(obj, pf.name, argument(args, pf.param, m))
            stored.add(pf.param)
    return obj, stored


def construct(run: Run, n: Node, typ: str, ctors: list[MethodInfo], args: list[Val]) -> Val:
    """``new T(args)`` of a project class: what its constructor stores in the object's fields
    fills their slots; the other arguments taint the object as a whole."""
    obj = Val(typ=typ)
    stored: set[int] = set()
    chosen = best_overloads(ctors, args) if ctors else []
    if chosen:
        run.apply(n, chosen, args)
        s = run.an.summaries.get(chosen[0].key) if len(chosen) == 1 else None
        if s is not None:
            obj, stored = _filled(obj, chosen[0], s, args)
    elif (record := _record(run, typ)) is not None and len(args) == len(record.components):
        for i, name in enumerate(record.components):  # the canonical constructor
            obj = library.with_member(obj, name, args[i])
            run.store(record, name, args[i])
            stored.add(i)
    rest = mix([deep(a) for i, a in enumerate(args) if i not in stored])
    return replace(obj, origins=rest.origins)


def _record(run: Run, typ: str | None) -> ClassInfo | None:
    return (
        next((c for c in run.an.project.classes(typ, run.cls) if c.components), None)
        if typ
        else None
    )


def accessor(run: Run, recv: Val, name: str) -> Val | None:
    """``reading.channel()`` on a record without that method written out: the component's
    slot (a number holds no text); None when ``name`` is no component of the receiver's type."""
    record = _record(run, recv.typ)
    if record is None or name not in record.components:
        return None
    got = library.member(recv, name)
    if got is None:
        got = run.an.field(record, name, run.expr)
    return as_number(got) if record.fields[name] in api.NON_TEXT_TYPES else got


def own_field(cls: ClassInfo, n: Node, env: Env) -> str | None:
    """The field of ``cls`` that expression ``n`` reads bare (``f``, ``this.f``)."""
    if n.type == "field_access" and (obj := child(n, "object")) is not None:
        name = text(child(n, "field")) if obj.type == "this" else ""
    else:
        name = text(n) if n.type == "identifier" and text(n) not in env else ""
    return name if name and name in cls.fields else None
