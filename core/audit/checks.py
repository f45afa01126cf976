"""Non-taint rules: weak hash and cipher choices, predictable randomness, insecure cookies.

Algorithm names are judged when they fold to a constant. A name read from configuration with
an in-code default (``props.getProperty("alg", "MD5")``) is judged by that default: it is what
runs whenever the setting is absent, and the engine cannot see deployment files. An algorithm
the engine cannot fold at all is not reported (no guess either way).

Pure judgements: :func:`check_call` says what a call means as a :class:`CallRule`, and the
interpreter records it.
"""

from __future__ import annotations

from typing import NamedTuple

from . import java_api as api
from . import judgements as judge
from .values import RANDOM, Origin, Val, deep, get_entry

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
_WEAK_DIGEST_GETTERS = frozenset({"getMd5Digest", "getMd2Digest", "getSha1Digest", "getShaDigest"})


class Report(NamedTuple):
    """A finding at the call itself."""

    cwe: int
    origin: Origin | None = None  # a random value in a cookie; None: the call is the weakness
    note: str = ""


class CallRule(NamedTuple):
    """What a call with a rule of its own means."""

    value: Val | None  # the call's value; None lets the generic handling of the call go on
    reports: tuple[Report, ...] = ()
    params: tuple[int, ...] = ()  # parameters that reach a CWE-330 sink here: summary facts


def check_call(
    name: str,
    static_cls: str | None,
    rtype: str | None,
    args: list[Val],
    random: Origin,
    weak_random: str,
    recv: Val | None = None,
) -> CallRule | None:
    """The rule of a call ``name`` (on class ``static_cls`` or a receiver of type ``rtype``);
    None for a call without one. ``random`` is the origin of a random value the call makes;
    ``weak_random`` the run's mode ("flow" or "any")."""
    owner = static_cls or rtype
    if name == "getInstance" and owner == "KeyPairGenerator" and args:
        return CallRule(Val(const=args[0].const, typ=owner))  # the algorithm, for initialize
    if name == "initialize" and owner == "KeyPairGenerator" and recv is not None and args:
        short = judge.short_key(recv.const, args[0].const)
        return CallRule(None, (Report(326, note=short),) if short else ())
    if name == "getInstance" and owner in _ALG_FACTORIES:
        alg = args[0].const if args else None
        cwe = weak_algorithm(owner, alg)
        reports = (Report(cwe, note=f"algorithm {alg!r}"),) if cwe is not None else ()
        return CallRule(Val(typ=owner), reports)
    if owner == "DigestUtils" and (
        judge.WEAK_DIGEST_UTILS.match(name) or name in _WEAK_DIGEST_GETTERS
    ):
        return CallRule(None, (Report(328, note=f"DigestUtils.{name}"),))
    if static_cls is not None and (static_cls, name) in _RANDOM_STATICS:
        return random_value(random, weak_random)
    if name == "addCookie" and args:
        return _cookie(args[0], weak_random)
    if name == "getProperty" and len(args) == 2 and isinstance(args[1].const, str):
        # props.getProperty("alg", "MD5"): the in-code default runs whenever the setting is absent.
        return CallRule(Val(const=args[1].const, typ="String"))
    return None


def sink_cwes(cwe: int, weak_random: str) -> tuple[int, ...]:
    """The CWEs a ``cwe`` sink reports: its own and, in "flow" mode, CWE-330 for a predictable
    random value that reaches the session or the response."""
    if weak_random == "flow" and cwe in api.RANDOM_SINK_CWES:
        return (cwe, 330)
    return (cwe,)


def random_value(origin: Origin, weak_random: str) -> CallRule:
    """A predictable random value; in "any" mode its creation is itself a finding."""
    reports = (Report(330),) if weak_random == "any" else ()
    return CallRule(Val(frozenset({origin}), typ="Random"), reports)


def weak_algorithm(owner: str | None, alg: object) -> int | None:
    """The CWE (328 weak hash, 327 weak cipher) when factory ``owner`` is given a weak
    algorithm name ``alg`` (a folded constant); None when it is not, or is unknown."""
    if not isinstance(alg, str):
        return None
    if owner == "MessageDigest":
        return 328 if judge.weak_digest(alg) else None
    return 327 if judge.weak_cipher(alg, cipher=owner == "Cipher") else None


def _cookie(cookie: Val, weak_random: str) -> CallRule:
    """``addCookie(c)``: a finding when ``setSecure(false)`` was called, or none was and the
    cookie's name says it carries a session, a login or a secret (or is not known); in "flow"
    mode a predictable random value in the cookie is one too, and a parameter in it a summary
    fact."""
    reports: list[Report] = []
    params: list[int] = []
    named = get_entry(cookie, "#name")
    name = named.const if isinstance(named, Val) else None
    if cookie.secure is False or (cookie.secure is None and judge.sensitive_cookie(name)):
        reports.append(Report(614, note="cookie added without setSecure(true)"))
    if weak_random == "flow":
        for o in deep(cookie).origins:
            if o.kind == RANDOM:
                reports.append(Report(330, o))
            elif o.is_param:
                params.append(o.position)
    return CallRule(None, tuple(reports), tuple(params))
