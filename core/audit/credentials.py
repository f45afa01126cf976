"""Secrets in code: hard-coded credentials, and predictable random values used as secrets.

What a name says a value holds is data (:data:`SECRET_NAMES`: the last word or two of a
variable, field, setter, getter or property key, so ``dbPassword`` and ``DB_PASSWORD`` hold a
password but ``passwordPrompt`` and ``PASSWORD_PARAM`` do not); which library arguments take a
password, a key or key material is data too (:data:`CREDENTIAL_ARGS`, :data:`KEY_MATERIAL_ARGS`).
The findings, by what the secret is:

* CWE-798, a hard-coded credential: a password, a cryptographic key (CWE-259 and CWE-321,
  which the finding's note tells apart), a token, an API key or a client secret. A literal (a
  string, its ``toCharArray()`` / ``getBytes()``, an array of literals, or a constant the
  interpreter folded) assigned to a secret's name, put under a secret's property key, or
  passed where an API takes a password or key. Empty strings and placeholders
  (``${db.password}``, ``changeme``, ``<secret>``) are not secrets, nor is a value that names
  one (``"password"``, ``"db.password"``); a value read from configuration or the environment
  is no literal.
* CWE-338, a predictable random value (``java.util.Random``, ``Math.random``) used as key
  material, IV, salt, nonce, token, password or session id: passed to a key or parameter spec
  or a secret's setter, or stored under a secret's name. ``SecureRandom`` makes no such value.

Pure functions over tree-sitter nodes and values; the interpreter and the per-file pass record
the :class:`Hit` s they return.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from .java import Node, child, children, text, walk
from .syntax import arguments, declared_type
from .values import RANDOM, Origin, Val, deep

PASSWORD, KEY, CREDENTIAL = "password", "key", "credential"
HARD_CODED = 798  # CWE-259 (password) and 321 (key) are its children; the note names the kind

# The last word (or two) of a name -> the kind of secret it holds.
SECRET_NAMES: dict[str, str] = {
    **dict.fromkeys(("password", "passwd", "pwd", "passphrase", "passcode", "pass"), PASSWORD),
    **dict.fromkeys(("secret", "credential", "credentials", "apikey", "api key"), CREDENTIAL),
    **{
        f"{w} token": CREDENTIAL
        for w in ("access", "auth", "bearer", "refresh", "api", "oauth", "session", "id")
        + ("jwt", "security", "private", "secret", "personal", "csrf", "github", "slack")
    },
    **{
        f"{w} key": KEY
        for w in ("private", "secret", "signing", "encryption", "decryption", "crypto")
        + ("cipher", "aes", "des", "hmac", "mac", "master", "symmetric", "shared", "jwt")
    },
}
_SECRET_WORDS = frozenset(phrase.split()[-1] for phrase in SECRET_NAMES)
# Besides the secrets above, what a predictable random value must not be.
RANDOM_SECRET_NAMES = frozenset(
    {"token", "salt", "nonce", "iv", "otp", "session id", "sessionid"}
    | {"reset code", "verification code", "activation code", "auth code", "one time password"}
    | {"pin", "totp", "hotp", "challenge", "key material", "key bytes"}
    | {"invite code", "access code", "confirmation code", "recovery code", "pairing code"}
)
# Values that stand in for a secret rather than being one.
_PLACEHOLDER = re.compile(
    r"^(\$\{.*\}|%[^%]*%|<[^>]*>|\{\{.*\}\}|[\s*x?#._-]*|(change[_-]?me|changethis|todo|fixme"
    r"|none|null|n/?a|tbd|placeholder|redacted|dummy|example|(your|enter)[\s_-][\w\s-]*))$",
    re.I | re.S,
)
_NAME_LIKE = re.compile(r"^[A-Za-z][A-Za-z_.\-]*$")  # "db.password", "X-Api-Key": a name
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# A token or API key is at least this long, and a plain word only when longer still: "_csrf"
# names a form field, "Bearer" a scheme. (A password may be any word.)
_MIN_CREDENTIAL, _MIN_WORDY_CREDENTIAL = 6, 16

# (owner simple type, method or "<init>") -> (argument position, kind); -1: the last one.
CREDENTIAL_ARGS: dict[tuple[str, str], tuple[int, str]] = {
    ("DriverManager", "getConnection"): (2, PASSWORD),
    ("DataSource", "getConnection"): (1, PASSWORD),
    ("PasswordAuthentication", "<init>"): (1, PASSWORD),
    ("PBEKeySpec", "<init>"): (0, PASSWORD),
    ("KeyStore", "load"): (1, PASSWORD),
    ("KeyStore", "store"): (1, PASSWORD),
    ("KeyStore", "getKey"): (1, PASSWORD),
    ("KeyStore", "setKeyEntry"): (2, PASSWORD),
    ("PasswordProtection", "<init>"): (0, PASSWORD),
    ("KeyManagerFactory", "init"): (1, PASSWORD),
    ("UsernamePasswordCredentials", "<init>"): (1, PASSWORD),
    ("UsernamePasswordAuthenticationToken", "<init>"): (1, PASSWORD),
    ("Transport", "connect"): (-1, PASSWORD),
    ("FTPClient", "login"): (1, PASSWORD),
    ("SecretKeySpec", "<init>"): (0, KEY),
    ("DESKeySpec", "<init>"): (0, KEY),
    ("DESedeKeySpec", "<init>"): (0, KEY),
    ("HmacUtils", "<init>"): (1, KEY),
    ("Algorithm", "HMAC256"): (0, KEY),
    ("Algorithm", "HMAC384"): (0, KEY),
    ("Algorithm", "HMAC512"): (0, KEY),
}
# Arguments that must be unpredictable: keys, IVs, nonces, salts (CWE-338 when predictable).
KEY_MATERIAL_ARGS: dict[tuple[str, str], tuple[int, ...]] = {
    ("SecretKeySpec", "<init>"): (0,),
    ("DESKeySpec", "<init>"): (0,),
    ("DESedeKeySpec", "<init>"): (0,),
    ("IvParameterSpec", "<init>"): (0,),
    ("GCMParameterSpec", "<init>"): (1,),
    ("ChaCha20ParameterSpec", "<init>"): (0,),
    ("RC2ParameterSpec", "<init>"): (1,),
    ("PBEKeySpec", "<init>"): (0, 1),
    ("PBEParameterSpec", "<init>"): (0,),
}
_CREDENTIAL_BY_NAME: dict[str, list[tuple[str, tuple[int, str]]]] = {}
for (_cls, _name), _spec in CREDENTIAL_ARGS.items():
    _CREDENTIAL_BY_NAME.setdefault(_name, []).append((_cls, _spec))
_MATERIAL_BY_NAME: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
for (_cls, _name), _positions in KEY_MATERIAL_ARGS.items():
    _MATERIAL_BY_NAME.setdefault(_name, []).append((_cls, _positions))
# Property setters whose first argument is the key the second is stored under.
_PROPERTY_PUTS = frozenset({"put", "setProperty", "addProperty", "putIfAbsent"})
# Calls that hand back their receiver's text: a literal's stays a literal.
_LITERAL_VIEWS = frozenset({"toCharArray", "getBytes", "toString", "trim", "strip", "intern"})
_SCOPES = frozenset({"method_declaration", "constructor_declaration", "lambda_expression"})
_CLASS_BODIES = frozenset({"class_body", "enum_body_declarations", "interface_body"})
_DECLARATORS = frozenset(
    {"variable_declarator", "formal_parameter", "spread_parameter", "resource"}
)
_ASSIGNMENTS = frozenset({"assignment_expression", "update_expression"})

ValueOf = Callable[[Node], Val]  # the interpreter's value of an expression


class Hit(NamedTuple):
    """One finding for the caller to record at a node."""

    cwe: int
    note: str
    confidence: str  # "high": an API's credential argument; "medium": judged by a name
    origin: Origin | None = None  # the predictable random value (CWE-338)


@lru_cache(maxsize=4096)
def words(name: str) -> tuple[str, ...]:
    """``dbPassword2`` / ``DB_PASSWORD`` -> ("db", "password") (trailing numbers dropped)."""
    ws = [w.lower() for w in _WORDS.findall(name)]
    while ws and ws[-1].isdigit():
        ws.pop()
    return tuple(ws)


def name_kind(name: str, table: dict[str, str] | frozenset[str] = SECRET_NAMES) -> str | None:
    """What the last word or two of ``name`` say it holds (a kind, or the phrase for a set)."""
    ws = words(name)
    for phrase in (" ".join(ws[-3:]), " ".join(ws[-2:]), "".join(ws[-2:]), ws[-1] if ws else ""):
        if phrase and phrase in table:
            return table[phrase] if isinstance(table, dict) else phrase
    return None


def is_secret_value(value: str, kind: str, *, named: bool = True) -> bool:
    """Whether literal ``value`` is a real secret of ``kind``, not a placeholder, nor (for a
    value ``named`` by a variable or key) the name of one: ``PASSWORD = "password"``."""
    if _PLACEHOLDER.match(value.strip()):
        return False
    if named and _NAME_LIKE.match(value) and _SECRET_WORDS.intersection(words(value)):
        return False
    if kind != CREDENTIAL or len(value) >= _MIN_WORDY_CREDENTIAL:
        return True
    return len(value) >= _MIN_CREDENTIAL and not _NAME_LIKE.match(value)


@lru_cache(maxsize=64)
def _declared(scope: Node) -> dict[str, list[Node]]:
    """The variables a method declares (locals and parameters, in source order) or a class
    body (its fields), by name."""
    if scope.type in _CLASS_BODIES:
        fields = (c for c in children(scope) if c.type == "field_declaration")
        decls = [d for f in fields for d in f.children_by_field_name("declarator")]
    else:
        decls = list(walk(scope, _DECLARATORS))
    out: dict[str, list[Node]] = {}
    for d in decls:
        out.setdefault(text(child(d, "name")), []).append(d)
    return out


@lru_cache(maxsize=64)
def _assigned(scope: Node) -> frozenset[str]:
    """The variables (and ``this.`` fields) assigned anywhere in ``scope``."""
    names = set()
    for n in walk(scope, _ASSIGNMENTS):
        target = child(n, "left") if n.type == "assignment_expression" else _first(n)
        if target is not None and target.type == "field_access":
            obj = child(target, "object")
            target = child(target, "field") if obj is not None and obj.type == "this" else None
        if target is not None and target.type == "identifier":
            names.add(text(target))
    return frozenset(names)


def _declaration(ident: Node) -> tuple[Node, Node] | None:
    """The declarator or parameter of the variable ``ident`` names, and the scope declaring
    it: the last one before ``ident`` in the enclosing method (or lambda, then the method
    around it), else a field of an enclosing class; None when it is declared elsewhere."""
    name = text(ident)
    node = ident.parent
    while node is not None:
        if node.type in _SCOPES or node.type in _CLASS_BODIES:
            found = [
                d
                for d in _declared(node).get(name, [])
                if node.type in _CLASS_BODIES or d.start_byte < ident.start_byte
            ]
            if found:
                return found[-1], node
        node = node.parent
    return None


def single_value(ident: Node) -> tuple[bool, Node | None]:
    """(known, value): the one value the variable ``ident`` holds when it is never assigned
    after its declaration (value None for a parameter or an uninitialised one); known False
    when it is undeclared here or assigned again."""
    found = _declaration(ident)
    if found is None or text(ident) in _assigned(found[1]):
        return False, None
    d = found[0]
    return True, child(d, "value") if d.type in ("variable_declarator", "resource") else None


def literal_of(node: Node | None, value_of: ValueOf | None = None, depth: int = 0) -> str | None:
    """The text of a hard-coded value: a literal, its ``toCharArray()`` / ``getBytes()``, an
    array of literals, a concatenation of them, a variable that only ever holds one, or (with
    ``value_of``, the interpreter's folding) a constant. None when the value is not one."""
    if node is None or depth > 6:
        return None
    t = node.type
    if t in ("string_literal", "text_block"):
        return "".join(text(c) for c in node.named_children if c.type == "string_fragment")
    if t in ("parenthesized_expression", "cast_expression"):
        inner = child(node, "value") if t == "cast_expression" else _first(node)
        return literal_of(inner, value_of, depth + 1)
    if t == "method_invocation" and text(child(node, "name")) in _LITERAL_VIEWS:
        return literal_of(child(node, "object"), value_of, depth + 1)
    if t in ("array_creation_expression", "array_initializer"):
        init = child(node, "value") if t == "array_creation_expression" else node
        items = children(init) if init is not None else []
        if items and all(i.type.endswith("literal") for i in items):
            return ",".join(text(i) for i in items)
        return None
    if t == "binary_expression" and text(child(node, "operator")) == "+":
        parts = [literal_of(child(node, s), value_of, depth + 1) for s in ("left", "right")]
        return None if None in parts else "".join(p or "" for p in parts)
    if t == "identifier":
        known, value = single_value(node)
        if known:
            return literal_of(value, value_of, depth + 1)
    if t in ("identifier", "field_access") and value_of is not None and "(" not in text(node):
        c = value_of(node).const  # a constant, or a field's: no call runs again
        return c if isinstance(c, str) else None
    return None


def declaration_hit(n: Node) -> Hit | None:
    """A hard-coded secret that declarator, assignment or call ``n`` states: a literal assigned
    to (or declared as) a variable or field whose name says it is a secret, or put under a
    secret's property key (``props.put("db.password", "tiger")``)."""
    if n.type == "method_invocation":
        args = arguments(n) if text(child(n, "name")) in _PROPERTY_PUTS else []
        if len(args) != 2:
            return None
        key = literal_of(args[0]) if args[0].type == "string_literal" else None
        if key is None and args[0].type in ("identifier", "field_access"):
            # `env.put(Context.SECURITY_CREDENTIALS, "...")`: a constant named for a secret
            key = text(child(args[0], "field") if args[0].type == "field_access" else args[0])
        return _literal_secret(key, args[1], "is set to a literal", "medium") if key else None
    if n.type == "variable_declarator":
        target, value = child(n, "name"), child(n, "value")
    else:
        target, value = child(n, "left"), child(n, "right")
        if target is not None and target.type == "field_access":
            target = child(target, "field")
    if target is None or target.type != "identifier" or value is None:
        return None
    return _literal_secret(text(target), value, "is a literal", "medium")


def _literal_secret(
    name: str,
    value: Node | None,
    what: str,
    confidence: str,
    value_of: ValueOf | None = None,
    kind: str | None = None,
) -> Hit | None:
    """A finding when ``value`` is a hard-coded secret: of the kind ``name`` says, or of
    ``kind`` (an API's argument, where even a word such as "secret" is the password)."""
    kind = kind or name_kind(name)
    lit = literal_of(value, value_of) if kind is not None else None
    if kind is None or lit is None or not is_secret_value(lit, kind, named=bool(name)):
        return None
    return Hit(HARD_CODED, f"{kind} '{name}' {what}" if name else what, confidence)


def call_hits(
    owner: str | None, name: str, args: list[Val], arg_nodes: list[Node], value_of: ValueOf
) -> list[Hit]:
    """The findings of a call ``owner.name(args)`` (``name`` "<init>" for ``new owner(…)``): a
    literal where it takes a password or key, a predictable random value where it takes key
    material or a secret's setter takes it."""
    owner = owner or ""
    setter = name[3:] if name.startswith("set") and len(args) == 1 else ""
    creds = [spec for cls, spec in _CREDENTIAL_BY_NAME.get(name, ()) if owner.endswith(cls)]
    kind = name_kind(setter) if setter else None
    creds += [(0, kind)] if kind is not None else []
    material = [p for cls, ps in _MATERIAL_BY_NAME.get(name, ()) if owner.endswith(cls) for p in ps]
    material += [0] if setter and _secret_for_random(setter) else []
    hits: list[Hit] = []
    for pos, kind in creds:
        node = arg_nodes[pos] if -len(arg_nodes) <= pos < len(arg_nodes) else None
        what = f"hard-coded {kind} passed to {_called(owner, name)}"
        hit = _literal_secret("", node, what, "high", value_of, kind)
        hits += [hit] if hit is not None else []
    for pos in material:
        origin = _random_origin(args[pos]) if pos < len(args) else None
        if origin is not None:
            what = f"predictable random value passed to {_called(owner, name)}"
            hits.append(Hit(338, what, "high", origin))
    return hits


def credential_args(owner: str | None, name: str, args: list[Val]) -> list[Val]:
    """What a call ``owner.name(args)`` takes as a password (``DriverManager.getConnection``'s
    third argument ...): a password read off a plain network channel and used so travelled in
    clear text (CWE-319, judged by the interpreter as a taint sink)."""
    owner = owner or ""
    specs = [spec for cls, spec in _CREDENTIAL_BY_NAME.get(name, ()) if owner.endswith(cls)]
    return [args[pos] for pos, kind in specs if kind == PASSWORD and -len(args) <= pos < len(args)]


def named_hits(name: str, v: Val, *, returned: bool = False) -> list[Hit]:
    """A predictable random value stored under a secret's name, or returned by a method named
    so (``String resetCode()``) (CWE-338)."""
    origin = _random_origin(v) if _secret_for_random(name) else None
    if origin is None:
        return []
    how = f"returned by {name}()" if returned else f"stored as '{name}'"
    return [Hit(338, f"predictable random value {how}", "medium", origin)]


def _first(n: Node) -> Node | None:
    return next(iter(children(n)), None)


def _called(owner: str, name: str) -> str:
    return f"new {owner}" if name == "<init>" else f"{name}()"


def _secret_for_random(name: str) -> bool:
    return name_kind(name) is not None or name_kind(name, RANDOM_SECRET_NAMES) is not None


def _random_origin(v: Val) -> Origin | None:
    return next((o for o in sorted(deep(v).origins) if o.kind == RANDOM), None)


def declared_type_of(ident: Node) -> str | None:
    """The simple declared type of the local, parameter or field ``ident`` names."""
    found = _declaration(ident)
    if found is None:
        return None
    d = found[0]
    holder = d if d.type == "formal_parameter" else d.parent
    return declared_type(holder) if holder is not None else None
