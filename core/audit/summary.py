"""Method summaries, and how a call site applies one.

Each method is interpreted once, with each parameter standing for itself
(:meth:`.values.Origin.param`). Its :class:`Summary` records what reaches its return and which
parameters reach which sinks; a call then substitutes its arguments for the parameters instead
of interpreting the callee again. The functions here are pure: the interpreter fetches the
summary, fires the sinks and records what :func:`sink_hits` finds at one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from . import java_api as api
from . import untrusted
from .project import MethodInfo
from .untrusted import SourceKind
from .values import CLEAN, Env, Origin, Val, as_number, assembled, deep, mix, reaching


class Site(NamedTuple):
    """A place in the audited tree: a sink, or the call that leads into one."""

    file: int  # index into the project's files
    line: int
    column: int


class ParamSink(NamedTuple):
    """A summary fact: parameter ``param`` of the method reaches a ``cwe`` sink at a site."""

    param: int
    cwe: int
    file: int
    line: int
    column: int

    @property
    def site(self) -> Site:
        return Site(self.file, self.line, self.column)


class ParamField(NamedTuple):
    """A summary fact: parameter ``param`` of the method is stored into field ``name`` of the
    class declared at ``owner`` (its file and start byte): a constructor or a setter."""

    param: int
    owner: tuple[int, int]
    name: str


@dataclass(frozen=True)
class Summary:
    """What one method does with its parameters, as its callers need it."""

    ret: Val  # the join of its return values, parameters as PARAM origins
    param_sinks: frozenset[ParamSink]
    param_fields: frozenset[ParamField] = frozenset()
    ret_field: str | None = None  # the instance field every return reads (a getter)


def argument(args: list[Val], i: int, m: MethodInfo) -> Val:
    """What a call passes as parameter ``i`` of ``m`` (all trailing arguments for varargs); a
    numeric parameter receives a number, whatever text the argument carried."""
    if m.varargs and i == len(m.params) - 1:
        return mix([deep(a) for a in args[i:]])
    if i >= len(args):
        return CLEAN
    numeric = i < len(m.params) and m.params[i][1] in api.NON_TEXT_TYPES
    return as_number(deep(args[i])) if numeric else deep(args[i])


def returned(s: Summary | None, m: MethodInfo, args: list[Val]) -> Val:
    """The value a call of ``m`` with ``args`` returns, by its summary ``s``.

    ``s`` is None while ``m`` is still being interpreted (recursion): then the arguments are
    assumed to flow through."""
    if s is None:
        return mix([deep(a) for a in args], m.ret)
    whole = deep(s.ret)
    if not any(o.is_param for o in whole.origins) and (s.ret.entries or s.ret.elems):
        # an object or container the method built: its slots, entries or elements as they are
        return s.ret if m.ret in (None, s.ret.typ) else s.ret.with_type(m.ret)
    own = frozenset(o for o in whole.origins if not o.is_param)
    parts = [Val(own, whole.safe, built=whole.built & own)]
    for o in whole.origins:
        if o.is_param:
            arg = argument(args, o.position, m)
            parts.append(assembled(arg) if o in whole.built else arg)
    v = mix(parts, m.ret)
    if v.origins and s.ret.safe:
        v = replace(v, safe=v.safe | s.ret.safe)
    if not v.origins:
        v = Val(const=s.ret.const, typ=m.ret)
    return as_number(v) if m.ret in api.NON_TEXT_TYPES else v


class SinkHits(NamedTuple):
    """What the values reaching one sink carry."""

    tainted: list[Origin]  # request data or random values: findings, in the order met
    params: list[int]  # parameters that reach the sink: summary facts
    built: list[int]  # of those, text assembled into a query here: a structural finding


def sink_hits(vals: list[Val], cwe: int, m: MethodInfo) -> SinkHits:
    """Sort the origins of ``vals`` that matter at a ``cwe`` sink inside method ``m``."""
    hits = SinkHits([], [], [])
    for v in vals:
        built_here = deep(v).built
        for o in reaching(v, cwe):
            if not o.is_param:
                hits.tainted.append(o)
                continue
            hits.params.append(o.position)
            if cwe in api.STRUCTURAL_CWES and o in built_here and _may_carry_text(m, o.position):
                hits.built.append(o.position)
    return hits


def _may_carry_text(m: MethodInfo, i: int) -> bool:
    """Whether parameter ``i`` of ``m`` may carry text (not a number or boolean)."""
    return i < len(m.params) and m.params[i][1] not in api.NON_TEXT_TYPES


def parameter_env(m: MethodInfo, fidx: int, line: int) -> Env:
    """What ``m``'s parameters stand for while it is summarised: each itself, unless it is the
    request or response object; and outside data read at ``line`` when the method is an entry
    point that receives it: Spring binds it from the request (``@RequestParam`` ...), a
    listener receives a message (``@KafkaListener`` ...), ``main`` its command line."""
    entry: SourceKind | None = None
    if untrusted.LISTENER_ANNOTATIONS.intersection(m.annotations):
        entry = "message"
    elif untrusted.is_main(m.name, m.static, m.params):
        entry = "command-line"
    env: Env = {}
    for i, (name, typ, annos) in enumerate(m.params):
        origins: set[Origin] = set()
        if not api.is_request_type(typ) and "Response" not in typ:
            origins.add(Origin.param(i))
        if api.SPRING_SOURCE_ANNOTATIONS.intersection(annos):
            origins.add(Origin.source("request", fidx, line))
        elif entry is not None:
            origins.add(Origin.source(entry, fidx, line))
        env[name] = Val(origins=frozenset(origins), typ=typ)
    return env
