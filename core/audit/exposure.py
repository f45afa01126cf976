"""Secrets that leave in clear text: in a cookie (CWE-315), over a plain channel (CWE-319).

A value is a secret when a name says so (:data:`SENSITIVE_NAMES`: the credentials of
:mod:`.credentials` and personal data such as an SSN or a card number), when it was read with
``readPassword()``, or when text assembled around it names one (``"password=" + p``). It stays
one through calls that pass text on (``getBytes``, ``new String``, plain ``Base64``) and through
local variables that only ever hold one value; a digest, a cipher, an HMAC or a password
encoder's hash protects it (:data:`_PROTECTING`).

* CWE-315: a secret stored as a cookie's value (``new Cookie(name, value)``, ``setValue``,
  Spring's ``ResponseCookie.from``).
* CWE-614: a Spring ``ResponseCookie`` built without ``secure(true)``.
* CWE-319: a secret written to a plain ``Socket``'s stream or to an ``http://`` connection's
  output stream, a credential header (``Authorization``...) set on an ``http://`` connection,
  or an ``http://`` URL (not localhost) that carries credentials: a
  ``user:password@`` or a secret's query parameter. An ``http://`` URL alone is no finding,
  nor is anything sent through ``SSLSocket`` or ``https://``.

Pure and syntactic: :func:`file_hits` reads one file's tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from . import java_api as api
from .credentials import (
    SECRET_NAMES,
    Hit,
    declaration_hit,
    declared_type_of,
    literal_of,
    name_kind,
    single_value,
    words,
)
from .java import Node, child, text, walk
from .syntax import arguments, declared_type

SENSITIVE_NAMES: dict[str, str] = {
    **SECRET_NAMES,
    **dict.fromkeys(
        ("ssn", "security number", "credit card", "creditcard", "card number", "cardnumber"),
        "personal data",
    ),
    **dict.fromkeys(("card no", "cvv", "cvc", "pin", "iban", "account number"), "personal data"),
}
# Query parameters that carry a credential besides the secrets' names.
_URL_SECRET_PARAMS = frozenset({"token", "key", "auth", "sig", "signature"})
# A method whose name says it protects its argument (a hash, a cipher, an HMAC, a seal).
_PROTECTING = re.compile(r"digest|dofinal|encrypt|hash|hmac|^sha\d*|^md[25]|seal", re.I)
# ``x.encode(p)`` hashes when ``x`` is a password encoder, not when it is Base64 or a URL one.
_HASHING_ENCODERS = ("passwordencoder", "bcrypt", "scrypt", "argon2", "pbkdf2")
_READS_PASSWORD = frozenset({"readPassword"})
# A call that makes a value rather than reads one (``newRefreshToken()`` is no accessor).
_MAKERS = frozenset(
    {("new",), ("create",), ("generate",), ("make",), ("issue",), ("build",), ("random",)}
    | {("next",), ("compute",), ("derive",)}
)
# Lookups whose key names what they return: ``settings.get("db.password")``,
# ``rs.getString("api_secret")``, ``System.getenv("TOKEN")``.
_LOOKUPS = frozenset({"get", "getProperty", "getString", "getenv", "getOrDefault", "getValue"})
# Objects that only pass what is written to them on to the stream they wrap.
_STREAM_WRAPPERS = frozenset(
    {"PrintWriter", "PrintStream", "DataOutputStream", "OutputStreamWriter", "BufferedWriter"}
    | {"BufferedOutputStream", "ObjectOutputStream"}
)
_PLAIN_SOCKETS = frozenset({"Socket"})  # SSLSocket is the TLS one
_CHANNEL_VIEWS = frozenset({"getOutputStream", "openConnection", "toURL"})
_WRITES = frozenset(
    {"write", "print", "println", "printf", "format", "append", "writeBytes", "writeUTF"}
    | {"writeChars", "writeObject"}
)
# Constructors and calls whose first argument is a URL to connect to.
_URL_CTORS = frozenset({"URL", "URI", "HttpGet", "HttpPost", "HttpPut", "HttpDelete", "HttpPatch"})
_URL_CALLS = frozenset(
    {"getForObject", "getForEntity", "postForObject", "postForEntity", "exchange"}
)
_LOCAL_HOST = re.compile(r"^(localhost|127(\.\d+){3}|\[::1\]|0\.0\.0\.0)$", re.I)
_NAMED_BEFORE = re.compile(r"([A-Za-z_][\w.-]*)\s*[=:]\s*$")  # "password=" + p
_DYNAMIC = "\0"  # a part of a URL the code computes
# Request headers that carry a credential, set on a connection.
_HEADER_SETTERS = frozenset({"setRequestProperty", "addRequestProperty"})
_CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token"}
)
_CALLS_JUDGED = (
    _URL_CTORS
    | _URL_CALLS
    | _WRITES
    | _HEADER_SETTERS
    | {"Cookie", "from", "setValue", "create", "build"}
)
_CANDIDATES = frozenset(
    {"object_creation_expression", "method_invocation", "variable_declarator"}
    | {"assignment_expression"}
)


def file_hits(root: Node) -> Iterator[tuple[Node, Hit]]:
    """The hard-coded secrets of one file (:func:`.credentials.declaration_hit`), and its
    cookies and plain channels that take a secret."""
    for n in walk(root, _CANDIDATES):
        found = declaration_hit(n)
        if found is not None:
            yield n, found
        if n.type not in ("object_creation_expression", "method_invocation"):
            continue
        name = declared_type(n) if n.type == "object_creation_expression" else _name(n)
        if name not in _CALLS_JUDGED:
            continue
        args = arguments(n)
        obj = child(n, "object")
        value = _cookie_value(n, name, args)
        what = secret(value) if value is not None else None
        if what is None and value is not None and _secret_cookie_name(n, name, args):
            what = None if _protected(value) else f"the value of cookie {text(args[0])}"
        if what is not None:
            yield n, Hit(315, f"{what} stored in a cookie in clear text", "medium")
        url = args[0] if args and _takes_url(n, name, obj) else None
        carried = _url_credentials(url_text(url)) if url is not None else None
        if carried is not None:
            yield n, Hit(319, f"{carried} sent over http://", "high")
        channel = plain_channel(obj) if name in _WRITES and obj is not None else None
        sent = _first_secret(args, -1) if channel is not None else None
        if sent is not None:
            yield n, Hit(319, f"{sent} written to {channel}", "medium")
        header = _credential_header(name, obj, args)
        if header is not None:
            yield n, Hit(319, header, "medium")
        if name == "build" and _insecure_cookie_builder(n):
            yield n, Hit(614, "cookie built without secure(true)", "high")


def _secret_cookie_name(n: Node, name: str, args: list[Node]) -> bool:
    """``new Cookie("SecretMessage", v)``: a cookie whose name says it holds a secret."""
    if len(args) < 2 or not (n.type == "object_creation_expression" or name == "from"):
        return False
    cookie = literal_of(args[0])
    return cookie is not None and any(name_kind(w, SENSITIVE_NAMES) for w in words(cookie))


def _protected(node: Node, depth: int = 0) -> bool:
    """Whether ``node``'s value went through a digest, a cipher or a password hash."""
    if depth > 8:
        return False
    if node.type == "method_invocation":
        name, obj = _name(node), child(node, "object")
        if _PROTECTING.search(name) or _hashes(name, obj):
            return True
        return any(_protected(a, depth + 1) for a in arguments(node)) or (
            obj is not None and _protected(obj, depth + 1)
        )
    if node.type == "identifier":
        known, value = single_value(node)
        return known and value is not None and _protected(value, depth + 1)
    return any(_protected(c, depth + 1) for c in node.named_children)


def _insecure_cookie_builder(n: Node) -> bool:
    """``ResponseCookie.from(name, value)....build()`` with no ``.secure(true)`` in the chain."""
    secure = False
    cur: Node | None = child(n, "object")
    while cur is not None and cur.type == "method_invocation":
        step, args = _name(cur), arguments(cur)
        if step == "secure":
            secure = secure or (len(args) == 1 and text(args[0]) == "true")
        if step in ("from", "fromClientResponse"):
            root = child(cur, "object")
            return root is not None and text(root).endswith("ResponseCookie") and not secure
        cur = child(cur, "object")
    return False


def _credential_header(name: str, obj: Node | None, args: list[Node]) -> str | None:
    """``c.setRequestProperty("Authorization", ...)`` on an ``http://`` connection."""
    if name not in _HEADER_SETTERS or len(args) != 2 or obj is None:
        return None
    channel = plain_channel(obj)
    if channel is None:
        return None
    header = (literal_of(args[0]) or "").lower()
    if header in _CREDENTIAL_HEADERS or secret(args[1]) is not None:
        return f"a credential header sent over {channel}"
    return None


def _name(n: Node) -> str:
    return text(child(n, "name"))


def _cookie_value(n: Node, name: str, args: list[Node]) -> Node | None:
    obj = child(n, "object")
    if n.type == "object_creation_expression":
        return args[1] if name == "Cookie" and len(args) >= 2 else None
    if name == "from" and len(args) == 2 and obj is not None and text(obj).endswith("Cookie"):
        return args[1]
    if name == "setValue" and len(args) == 1 and obj is not None and obj.type == "identifier":
        return args[0] if declared_type_of(obj) == "Cookie" else None
    return None


def _takes_url(n: Node, name: str, obj: Node | None) -> bool:
    if n.type == "object_creation_expression":
        return name in _URL_CTORS
    return name in _URL_CALLS or (name == "create" and obj is not None and text(obj) == "URI")


def secret(node: Node | None, depth: int = 0) -> str | None:
    """What makes ``node``'s value a secret, or None when it is none or protected."""
    if node is None or depth > 8:
        return None
    t = node.type
    if t in ("identifier", "field_access"):
        name = text(node) if t == "identifier" else text(child(node, "field"))
        if name_kind(name, SENSITIVE_NAMES) is not None:
            return f"'{name}'"
        known, value = single_value(node) if t == "identifier" else (False, None)
        return secret(value, depth + 1) if known else None
    if t == "method_invocation":
        name, obj = _name(node), child(node, "object")
        if name in api.NON_PROPAGATING or _PROTECTING.search(name) or _hashes(name, obj):
            return None
        if name in _READS_PASSWORD:
            return f"a password read with {name}()"
        prop = name[3:] if name.startswith("get") else name  # a getter, or a record's accessor
        accessor = name.startswith("get") or words(name)[:1] not in _MAKERS
        if not arguments(node) and accessor and name_kind(prop, SENSITIVE_NAMES):
            return f"{name}()"
        key = literal_of(arguments(node)[0]) if name in _LOOKUPS and arguments(node) else None
        if key is not None and name_kind(key, SENSITIVE_NAMES):
            return f"the '{key}' setting"
        return _first_secret([obj, *arguments(node)], depth)
    if t == "object_creation_expression":
        protected = _PROTECTING.search(declared_type(node))
        return None if protected else _first_secret(arguments(node), depth)
    if t == "binary_expression" and text(child(node, "operator")) == "+":
        parts = _concat_parts(node)
        for lit, nxt in zip(parts, parts[1:], strict=False):
            before = literal_of(lit)
            m = _NAMED_BEFORE.search(before or "")
            if m and literal_of(nxt) is None and name_kind(m.group(1), SENSITIVE_NAMES):
                return f"'{m.group(0).strip()}' + a value"
        return _first_secret(parts, depth)
    if t in ("parenthesized_expression", "cast_expression", "ternary_expression"):
        return _first_secret(node.named_children, depth)
    return None


def _hashes(name: str, obj: Node | None) -> bool:
    return (
        name == "encode"
        and obj is not None
        and any(w in text(obj).lower() for w in _HASHING_ENCODERS)
    )


def _first_secret(nodes: Sequence[Node | None], depth: int) -> str | None:
    return next((s for s in (secret(n, depth + 1) for n in nodes) if s is not None), None)


def _concat_parts(node: Node) -> list[Node]:
    """The operands of a ``+`` chain, left to right (walked with a stack of its own: generated
    code concatenates thousands of terms)."""
    out: list[Node] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if n.type == "binary_expression" and text(child(n, "operator")) == "+":
            todo.extend(x for x in (child(n, "right"), child(n, "left")) if x is not None)
        elif n.type == "parenthesized_expression" and n.named_children:
            todo.append(n.named_children[0])
        else:
            out.append(n)
    return out


def url_text(node: Node | None, depth: int = 0) -> str:
    """The text of a URL expression, each part the code computes as ``\\0``."""
    if node is None or depth > 4:
        return _DYNAMIC
    if node.type == "identifier":
        known, value = single_value(node)
        if known and value is not None and literal_of(value) is None:
            return url_text(value, depth + 1)
    parts = _concat_parts(node)
    if len(parts) > 1:
        return "".join(url_text(p, depth + 1) for p in parts)
    lit = literal_of(node)
    return lit if lit is not None else _DYNAMIC


def _http_host(url: str) -> tuple[str, str] | None:
    """(userinfo, host) of a plain ``http://`` URL to a host other than this one."""
    if not url.lower().startswith("http://"):
        return None
    authority = re.split(r"[/?#]", url[7:], maxsplit=1)[0]
    userinfo, _, hostport = authority.rpartition("@")
    host = hostport if hostport.startswith("[") else hostport.split(":")[0]
    return None if _LOCAL_HOST.match(host) else (userinfo, host)


def _url_credentials(url: str) -> str | None:
    """What credential a plain ``http://`` URL carries, or None."""
    where = _http_host(url)
    if where is None:
        return None
    if ":" in where[0]:
        return "a user:password in the URL"
    for m in re.finditer(r"[?&;]([^=&#?;]+)=", url):
        param = m.group(1).replace(_DYNAMIC, "")
        if param and (name_kind(param) or param.lower() in _URL_SECRET_PARAMS):
            return f"the '{param}' query parameter"
    return None


def plain_channel(node: Node | None, depth: int = 0) -> str | None:
    """The unencrypted channel ``node`` writes to ("a plain Socket", "an http:// connection"),
    or None: TLS, or nothing known."""
    if node is None or depth > 8:
        return None
    t = node.type
    if t == "identifier":
        known, value = single_value(node)
        return plain_channel(value, depth + 1) if known else None
    if t == "parenthesized_expression" and node.named_children:
        return plain_channel(node.named_children[0], depth + 1)
    if t == "cast_expression":
        typ = declared_type(node)
        tls = "SSL" in typ or "Https" in typ
        return None if tls else plain_channel(child(node, "value"), depth + 1)
    if t == "object_creation_expression":
        typ, args = declared_type(node), arguments(node)
        if typ in _PLAIN_SOCKETS:
            return "a plain Socket"
        if typ == "URL" and args and _http_host(url_text(args[0])) is not None:
            return "an http:// connection"
        return plain_channel(args[0], depth + 1) if typ in _STREAM_WRAPPERS and args else None
    if t == "method_invocation":
        name, obj = _name(node), child(node, "object")
        if name in _CHANNEL_VIEWS:
            return plain_channel(obj, depth + 1)
        made = "".join(text(obj).split()) if obj is not None else ""
        args = arguments(node)
        if (
            name == "create"
            and made.rsplit(".", 1)[-1] == "URI"
            and args
            and _http_host(url_text(args[0]))
        ):
            return "an http:// connection"  # `URI.create("http://...").toURL()`
        if name == "createSocket" and made.endswith("SocketFactory.getDefault()"):
            return None if "SSL" in made else "a plain Socket"
    return None
