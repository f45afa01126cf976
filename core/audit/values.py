"""Abstract values of the data-flow engine: taint origins, per-CWE sanitisation, constants.

An :class:`Origin` says where tainted data came from: outside data of one source kind read at a
line (:mod:`.untrusted`), a predictable random value made at a line, or a parameter of the method
being summarised. A value
may also carry a folded constant, precise container contents (list elements / map entries under
constant keys) and a static type name, which of its origins were assembled into text
(concatenation, ``String.format``, a StringBuilder) and whether it is a normalised path. An
:data:`Env` maps a method's local variables to their values at one point of its body.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Literal, NamedTuple, get_args

from .untrusted import KINDS, SourceKind

# A source kind (outside data read at a line, :mod:`.untrusted`), a predictable random value made
# at a line, or the n-th parameter of the method being summarised.
OriginKind = SourceKind | Literal["random", "param"]
REQUEST: OriginKind = "request"
RANDOM: OriginKind = "random"
PARAM: OriginKind = "param"


class Origin(NamedTuple):
    """Where tainted data came from.

    A NamedTuple rather than a dataclass: origins are hashed into a frozenset at every merge,
    where a tuple's C hash is the cheapest. It also hashes and compares like the plain tuple
    it replaced, so a set of origins iterates in the order it did (the first origin met at a
    sink is the one its finding's trace names)."""

    kind: OriginKind
    file: int  # index into the project's files; -1 for a parameter
    at: int  # the line for REQUEST and RANDOM, the parameter's position for PARAM

    @classmethod
    def source(cls, kind: SourceKind, file: int, line: int) -> Origin:
        return cls(kind, file, line)

    @classmethod
    def request(cls, file: int, line: int) -> Origin:
        return cls(REQUEST, file, line)

    @classmethod
    def random(cls, file: int, line: int) -> Origin:
        return cls(RANDOM, file, line)

    @classmethod
    def param(cls, position: int) -> Origin:
        return cls(PARAM, -1, position)

    @property
    def is_param(self) -> bool:
        return self.kind == PARAM

    @property
    def line(self) -> int:
        """The line where outside data was read or a random value made (not PARAM)."""
        return self.at

    @property
    def position(self) -> int:
        """The parameter's position, from 0 (PARAM)."""
        return self.at


INJECTION_KINDS: frozenset[OriginKind] = frozenset(get_args(SourceKind))
RANDOM_KINDS: frozenset[OriginKind] = frozenset({RANDOM})
MISSING = object()
MARKER_TYPES = frozenset({"ResponseWriter"})  # the response's writer or output stream


@dataclass(frozen=True)
class Val:
    """What the engine knows about one Java value."""

    origins: frozenset[Origin] = frozenset()
    safe: frozenset[int] = frozenset()  # CWEs this (tainted) value was sanitised for
    const: object = None  # str | int | float | bool folded constant, None when unknown
    elems: tuple[Val, ...] | None = None  # precise list/array contents
    entries: tuple[tuple[str, Val], ...] | None = None  # precise map contents (constant keys)
    typ: str | None = None  # simple static type name when known
    secure: bool | None = None  # Cookie: the constant passed to setSecure, if any
    built: frozenset[Origin] = frozenset()  # origins concatenated / formatted into this text
    norm: bool = False  # a path after normalize() / toRealPath() / getCanonicalPath()

    @property
    def tainted(self) -> bool:
        return bool(self.origins)

    def with_type(self, typ: str | None) -> Val:
        # A marker type (what the engine learnt from the producing call) beats a declared one.
        if not typ or typ == self.typ or self.typ in MARKER_TYPES:
            return self
        return replace(self, typ=typ)

    def kinds(self) -> frozenset[OriginKind]:
        return frozenset(o.kind for o in self.origins)


CLEAN = Val()
Env = dict[str, Val]


def const(value: object, typ: str | None = None) -> Val:
    return Val(const=value, typ=typ)


def mix(vals: list[Val], typ: str | None = None) -> Val:
    """The value derived from all of ``vals`` (concatenation, default method propagation)."""
    tainted = [v for v in vals if v.origins]
    if not tainted:
        return Val(typ=typ)
    origins: frozenset[Origin] = frozenset().union(*(v.origins for v in tainted))
    safe = tainted[0].safe.intersection(*(v.safe for v in tainted[1:]))
    built: frozenset[Origin] = frozenset().union(*(v.built for v in tainted))
    return Val(origins=origins, safe=safe, typ=typ, built=built)


def assembled(v: Val) -> Val:
    """``v`` as text assembled from its parts: every origin of it was concatenated in."""
    return replace(v, built=v.origins) if v.origins else v


def deep(v: Val) -> Val:
    """Collapse container contents into the value's own taint (e.g. before an unknown use)."""
    parts = [v]
    if v.elems is not None:
        parts.extend(deep(e) for e in v.elems)
    if v.entries is not None:
        parts.extend(deep(e) for _, e in v.entries)
    return mix(parts, v.typ)


def join(a: Val, b: Val) -> Val:
    """Merge of two control-flow paths."""
    if a is b or a == b:
        return a
    m = mix([a, b], a.typ or b.typ)
    c = a.const if a.const == b.const and type(a.const) is type(b.const) else None
    elems = None
    if a.elems is not None and b.elems is not None and len(a.elems) == len(b.elems):
        elems = tuple(join(x, y) for x, y in zip(a.elems, b.elems, strict=True))
    elif a.elems is not None or b.elems is not None:
        m = mix([m, deep(a), deep(b)], m.typ)
    entries = None
    if a.entries is not None and b.entries is not None:
        da, db = dict(a.entries), dict(b.entries)
        entries = tuple((k, join(da.get(k, CLEAN), db.get(k, CLEAN))) for k in sorted({*da, *db}))
    elif a.entries is not None or b.entries is not None:
        m = mix([m, deep(a), deep(b)], m.typ)
    secure = a.secure if a.secure == b.secure else None
    return Val(m.origins, m.safe, c, elems, entries, m.typ, secure, m.built, a.norm and b.norm)


def sanitize(v: Val, cwes: frozenset[int]) -> Val:
    v = deep(v)
    return replace(v, safe=v.safe | cwes) if v.origins else v


@cache
def kinds_for(cwe: int) -> frozenset[OriginKind]:
    """The origins a sink of ``cwe`` reports: random values for CWE-330, else the source kinds
    that the catalog says feed ``cwe`` (all of them for a CWE it does not name)."""
    if cwe == 330:
        return RANDOM_KINDS
    fed = frozenset(k for k in INJECTION_KINDS if cwe in KINDS[k].cwes)
    return fed or INJECTION_KINDS


def reaching(v: Val, cwe: int) -> frozenset[Origin]:
    """Origins of ``v`` (containers included) that matter for a sink of ``cwe``."""
    d = deep(v)
    if cwe in d.safe:
        return frozenset()
    kinds = kinds_for(cwe)
    return frozenset(o for o in d.origins if o.kind in kinds or o.is_param)


def without_params(v: Val) -> Val:
    """``v`` without parameter origins: what a field keeps, since a field outlives the call."""
    if not any(o.is_param for o in deep(v).origins):
        return v
    d = deep(v)
    keep = frozenset(o for o in d.origins if not o.is_param)
    return replace(d, origins=keep, built=d.built & keep, safe=d.safe if keep else frozenset())


def get_entry(v: Val, key: object) -> Val | object:
    """The map entry of ``v`` under ``key``; CLEAN when absent, MISSING when ``v`` is no
    precise map."""
    if v.entries is None:
        return MISSING
    for k, e in v.entries:
        if k == key:
            return e
    return CLEAN


def join_envs(envs: list[Env | None]) -> Env | None:
    """Merge the environments of the paths that meet here; None stands for a path that ended
    (return, throw, break)."""
    live = [e for e in envs if e is not None]
    if not live:
        return None
    out = dict(live[0])
    for e in live[1:]:
        for k in set(out) | set(e):
            out[k] = join(out.get(k, CLEAN), e.get(k, CLEAN))
    return out


def as_number(v: Val) -> Val:
    """``v`` held in a numeric or boolean variable: no text of it survives, so only a
    predictable random value (a number too) stays tainted."""
    keep = frozenset(o for o in deep(v).origins if o.kind == RANDOM)
    if not keep and v.const is None and not v.origins:
        return v
    return Val(keep, const=v.const if isinstance(v.const, int | float) else None, typ=v.typ)
