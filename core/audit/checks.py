"""Non-taint rules: weak hash and cipher choices, predictable randomness, insecure cookies.

Algorithm names are judged when they fold to a constant. A name read from configuration with
an in-code default (``props.getProperty("alg", "MD5")``) is judged by that default: it is what
runs whenever the setting is absent, and the engine cannot see deployment files. An algorithm
the engine cannot fold at all is not reported (no guess either way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import java_api as api
from .java import Node, col_of, line_of
from .values import Val, deep

if TYPE_CHECKING:
    from .calls import CallsMixin

_ALG_FACTORIES = frozenset({"MessageDigest", "Cipher", "KeyGenerator", "SecretKeyFactory"})
_RANDOM_STATICS = {
    ("Math", "random"),
    ("ThreadLocalRandom", "current"),
    ("RandomStringUtils", "random"),
    ("RandomStringUtils", "randomAlphanumeric"),
    ("RandomStringUtils", "randomNumeric"),
    ("RandomStringUtils", "randomAlphabetic"),
    ("RandomUtils", "nextInt"),
    ("RandomUtils", "nextLong"),
}


def random_value(run: CallsMixin, n: Node) -> Val:
    """A predictable random value; in "any" mode its creation is itself a finding."""
    if run.an.weak_random == "any":
        run.an.report(run.fidx, n, 330, None, None)
    return Val(frozenset({("R", run.fidx, line_of(n))}), typ="Random")


def check_call(
    run: CallsMixin,
    n: Node,
    name: str,
    static_cls: str | None,
    rtype: str | None,
    recv: Val | None,
    args: list[Val],
) -> Val | None:
    """Handle calls with a rule of their own; None lets the generic handling go on."""
    owner = static_cls or rtype
    if name == "getInstance" and owner in _ALG_FACTORIES:
        alg = args[0].const if args else None
        if isinstance(alg, str):
            weak = (
                api.weak_digest(alg)
                if owner == "MessageDigest"
                else api.weak_cipher(alg, cipher=owner == "Cipher")
            )
            if weak:
                cwe = 328 if owner == "MessageDigest" else 327
                run.an.report(run.fidx, n, cwe, None, None, note=f"algorithm {alg!r}")
        return Val(typ=owner)
    if owner == "DigestUtils" and (
        api.WEAK_DIGEST_UTILS.match(name)
        or name in ("getMd5Digest", "getMd2Digest", "getSha1Digest", "getShaDigest")
    ):
        run.an.report(run.fidx, n, 328, None, None, note=f"DigestUtils.{name}")
        return None
    if static_cls is not None and (static_cls, name) in _RANDOM_STATICS:
        return random_value(run, n)
    if name == "addCookie" and args:
        cookie = args[0]
        if cookie.secure is not True:
            run.an.report(run.fidx, n, 614, None, None, note="cookie added without setSecure(true)")
        if run.an.weak_random == "flow":
            for o in deep(cookie).origins:
                if o[0] == "R":
                    run.an.report(run.fidx, n, 330, o, None)
                elif o[0] == "P":
                    run.param_sinks.add((o[2], 330, run.fidx, line_of(n), col_of(n)))
        return None
    if name == "getProperty" and len(args) == 2 and isinstance(args[1].const, str):
        return Val(const=args[1].const, typ="String")
    return None
