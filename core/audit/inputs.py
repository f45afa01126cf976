"""Where outside data enters at a library call: sources, buffers a call fills, deserialisation.

Functions over the interpreter's method run (:class:`.closures.Run`); the knowledge of which
calls these are is data in :mod:`.untrusted` and :mod:`.java_api`.
"""

from __future__ import annotations

from . import java_api as api
from . import library, untrusted
from .closures import Run
from .java import Node, line_of, text
from .values import CLEAN, Env, Origin, Val, deep, mix, sanitize


def fill(run: Run, n: Node, name: str, rtype: str | None, arg_nodes: list[Node], env: Env) -> None:
    """``message.readBytes(buf)``, ``socket.receive(packet)``: the local variables passed now
    hold outside data. ``ObjectMessage.getObject()`` deserialises outside bytes: a finding."""
    kind = untrusted.filler(name, rtype)
    if kind is not None:
        here = Val(frozenset({Origin.source(kind, run.fidx, line_of(n))}))
        for a in arg_nodes:
            if a.type == "identifier" and text(a) in env:
                env[text(a)] = mix([env[text(a)], here], env[text(a)].typ)
    outside = untrusted.deserialises(name, rtype)
    if outside is not None:
        run.an.report(run.fidx, n, 502, Origin.source(outside, run.fidx, line_of(n)), None)


def entering(
    run: Run,
    n: Node,
    name: str,
    static_cls: str | None,
    rtype: str | None,
    objn: Node | None,
    recv: Val | None,
    env: Env,
) -> Val | None:
    """The value of a call that reads outside data (a source, ``readObject``), or that filters a
    deserialising stream; None for any other call."""
    if recv is not None and _deserializer(run, rtype):
        if name in api.READ_OBJECT:
            run.sink(n, 502, [recv])
            return _deserialised(run, n, recv)
        if name in api.DESERIALIZATION_FILTERS:
            if objn is not None and text(objn) in env:  # it now refuses classes outside the filter
                env[text(objn)] = sanitize(recv, frozenset({502}))
            return CLEAN
    source = library.source_of(name, static_cls, rtype)
    if source is None:
        return None
    kind, result = source
    return Val(frozenset({Origin.source(kind, run.fidx, line_of(n))}), typ=result)


def _deserializer(run: Run, rtype: str | None) -> bool:
    """Whether a receiver of type ``rtype`` deserialises: a library deserialiser, or a project
    subclass of one that does not check classes itself (no ``resolveClass`` of its own)."""
    if rtype in api.DESERIALIZERS:
        return True
    return any(
        api.DESERIALIZERS.intersection(c.supers) and "resolveClass" not in c.methods
        for c in (run.an.project.classes(rtype, run.cls) if rtype else [])
    )


def _deserialised(run: Run, n: Node, stream: Val) -> Val:
    """``in.readObject()``: an object made from whatever outside data the stream holds."""
    origins = deep(stream).origins
    own = frozenset(o for o in origins if o.is_param)
    if len(own) < len(origins):
        own |= {Origin.source("deserialization", run.fidx, line_of(n))}
    return Val(own)


def loaded(
    run: Run, n: Node, name: str, rtype: str | None, path: str | None, args: list[Val]
) -> Val | None:
    """``props.load(stream)`` from outside data: the receiver's new value (a settings store of
    that kind), or None when the call loads nothing from outside."""
    kind = untrusted.LOADERS.get((rtype or "", name))
    if kind is None or path is None or not any(deep(a).origins for a in args):
        return None
    return Val(frozenset({Origin.source(kind, run.fidx, line_of(n))}), typ=rtype)
