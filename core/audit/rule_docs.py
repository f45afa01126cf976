"""What code-scanning dashboards show about a rule, as data: the help (what the weakness is, how
to fix it), the security severity and the precision.

The knowledge is keyed by CWE, not by rule, so a rule added to ``BUILTIN_RULES`` (or a topic's
line rule, or a model finding) gets help and a severity from its CWE alone; a CWE not listed
here still gets valid help, generated from the rule's title and description, and the default
severity. The prose is Zhixing's own, written from general security knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .model import AuditRule

__all__ = [
    "SECURITY_SEVERITY",
    "WEAKNESSES",
    "Weakness",
    "precision",
    "rule_help",
    "security_severity",
]

# CWE -> security severity, 0.0-10.0, as GitHub code scanning reads `security-severity`
# (>= 9.0 critical, 7.0-8.9 high, 4.0-6.9 medium, below low). The figures are Zhixing's own
# judgement per weakness class, in the spirit of a CVSS v3 base score for the typical case in
# a Java web application (remote, no privileges, the usual impact of the class); they are not
# taken from any published table, and a real finding can be worse or milder than its class.
SECURITY_SEVERITY: dict[int, float] = {
    15: 5.3,  # external control of a system or configuration setting
    20: 5.3,  # improper input validation
    22: 7.5,  # path traversal: read or write files outside the intended folder
    23: 7.5,  # relative path traversal
    35: 7.5,  # path traversal with '.../...//'
    77: 9.8,  # command injection
    78: 9.8,  # OS command injection: code execution on the server
    79: 6.1,  # cross-site scripting
    80: 6.1,  # basic XSS
    89: 8.8,  # SQL injection: read or change the database
    90: 8.1,  # LDAP injection
    94: 9.8,  # code injection
    113: 6.1,  # HTTP response splitting
    117: 4.3,  # log injection (forged log lines)
    190: 5.9,  # integer overflow
    200: 5.3,  # exposure of sensitive information
    209: 5.3,  # error message that reveals internals
    259: 7.5,  # hard-coded password
    295: 7.4,  # improper certificate validation
    311: 6.5,  # sensitive data not encrypted
    315: 5.3,  # cleartext sensitive data in a cookie
    319: 5.9,  # cleartext transmission
    321: 7.5,  # hard-coded cryptographic key
    326: 5.9,  # key too short
    327: 7.5,  # broken or risky cipher
    328: 5.9,  # weak hash
    330: 5.3,  # insufficiently random values
    338: 5.3,  # non-cryptographic PRNG for a security value
    352: 6.5,  # cross-site request forgery
    470: 8.1,  # unsafe reflection: attacker picks the class or method
    501: 4.3,  # trust boundary violation
    502: 9.8,  # deserialization of untrusted data: often code execution
    532: 5.5,  # sensitive information in a log
    601: 6.1,  # open redirect
    611: 8.2,  # XML external entities
    614: 4.3,  # cookie without the Secure flag
    643: 7.5,  # XPath injection
    798: 7.5,  # hard-coded credentials
    917: 9.8,  # expression language injection
    918: 8.6,  # server-side request forgery
    1004: 4.3,  # cookie without HttpOnly
}
# A CWE not in the table, or a finding with none: the middle of the medium band.
DEFAULT_SECURITY_SEVERITY = 5.0


@dataclass(frozen=True)
class Weakness:
    """A weakness in a few sentences: its name, what goes wrong, how to fix it."""

    name: str
    risk: str
    fix: str


_BIND = "Pass the value as a bind parameter instead of building the text from it"

WEAKNESSES: dict[int, Weakness] = {
    15: Weakness(
        "External control of a configuration setting",
        "A setting that governs the application (a catalog, a system property, a connection"
        " option) takes its value from outside, so a caller can switch behaviour the"
        " developers meant to fix.",
        "Keep such settings out of reach of request data; if a choice must be offered, map"
        " an allow-listed key to a value the application defines.",
    ),
    20: Weakness(
        "Improper input validation",
        "Input is used without checking that it has the expected form, range or length.",
        "Validate input where it enters, against what is allowed (type, length, range,"
        " an allow-list), and reject the rest.",
    ),
    22: Weakness(
        "Path traversal",
        "A file name or path built from outside data can contain `..` or an absolute path"
        " and so reach files outside the folder the application meant to serve or write.",
        "Do not build paths from request data. If you must, take only a file name, resolve"
        " it against a fixed base folder, normalise it and check that the result still lies"
        " inside that folder; better, map an identifier to a path you choose.",
    ),
    23: Weakness(
        "Relative path traversal",
        "Outside data with `../` sequences walks out of the intended folder.",
        "Resolve and normalise the path against a fixed base and refuse any result outside"
        " it; prefer identifiers mapped to known files.",
    ),
    35: Weakness(
        "Path traversal with obfuscated sequences",
        "Sequences such as `.../...//` survive a naive filter and still climb folders.",
        "Check the normalised, resolved path against the base folder instead of filtering"
        " the text.",
    ),
    77: Weakness(
        "Command injection",
        "A command assembled from outside data lets the data add options or commands.",
        "Avoid shelling out; otherwise pass fixed program names and arguments as a list and"
        " validate each argument against an allow-list.",
    ),
    78: Weakness(
        "OS command injection",
        "When a command line is built from outside data, that data can add arguments or,"
        " through a shell, whole commands, which then run with the application's rights.",
        "Prefer a Java library call to an external program. If a process is needed, start a"
        " fixed executable with a list of arguments (never `sh -c` with joined text), and"
        " check each argument taken from input against an allow-list.",
    ),
    79: Weakness(
        "Cross-site scripting (XSS)",
        "Data written into an HTML page without encoding can carry markup and script that"
        " the victim's browser runs in the site's origin: session theft, forged actions.",
        "Encode output for the context it lands in (HTML body, attribute, JavaScript, URL),"
        " preferably through a template engine that escapes by default; set a restrictive"
        " Content-Security-Policy as a second line.",
    ),
    80: Weakness(
        "Script tags in a web page (basic XSS)",
        "Markup such as `<script>` in data rendered unescaped runs in the browser.",
        "Render data through escaping templates (e.g. `th:text`, not `th:utext`) and encode"
        " it for its HTML context.",
    ),
    89: Weakness(
        "SQL injection",
        "SQL text assembled from outside data lets that data change the statement:"
        " read other rows, bypass checks, modify or delete data.",
        f"{_BIND}: a PreparedStatement with `?` placeholders, named parameters in"
        " JdbcTemplate or JPA. Identifiers (column, sort order) cannot be bound: pick them"
        " from an allow-list.",
    ),
    90: Weakness(
        "LDAP injection",
        "A directory filter or name built from outside data can be widened with filter"
        " metacharacters (`*`, `(`, `)`, `|`) to match or expose other entries.",
        "Escape values for the LDAP filter or DN context (RFC 4515/4514 escaping), or use an"
        " API that takes filter arguments separately; validate input against an allow-list.",
    ),
    94: Weakness(
        "Code injection",
        "Outside data is evaluated as code (a script engine, a template, a compiler).",
        "Never evaluate input as code; offer a fixed set of operations selected by key.",
    ),
    113: Weakness(
        "HTTP response splitting",
        "A header value that carries CR or LF characters from outside data can end the"
        " header block early and inject headers or a forged body.",
        "Refuse or strip CR and LF in any value placed in a response header; use the"
        " container's header APIs, which reject them in recent versions, and validate"
        " the value's form.",
    ),
    117: Weakness(
        "Log injection",
        "Outside data written to a log can carry line breaks or control characters that forge"
        " entries or mislead whoever reads the log.",
        "Encode or strip CR, LF and other control characters in logged values, or log in a"
        " structured format (JSON) that escapes them.",
    ),
    190: Weakness(
        "Integer overflow",
        "Arithmetic on an outside value wraps around, so a size, index or amount becomes"
        " negative or small and a later check or allocation goes wrong.",
        "Check ranges before the arithmetic, use `Math.addExact`/`multiplyExact` or a wider"
        " type, and validate sizes taken from input.",
    ),
    200: Weakness(
        "Exposure of sensitive information",
        "Data meant for a few is shown to a wider audience.",
        "Return only the fields the caller needs and is allowed to see.",
    ),
    209: Weakness(
        "Information exposure through an error message",
        "Stack traces, SQL errors or internal paths shown to the user help an attacker map"
        " the system.",
        "Show a generic message with a reference id; log the detail on the server only.",
    ),
    259: Weakness(
        "Hard-coded password",
        "A password in the source is known to everyone who can read the code or the built"
        " artifact, cannot be rotated without a release, and is often the same everywhere.",
        "Read the password at run time from a secret store or the environment, and rotate"
        " the one that was committed.",
    ),
    295: Weakness(
        "Improper certificate validation",
        "Accepting any TLS certificate or host name lets a man in the middle read and"
        " change the traffic.",
        "Keep the platform's trust manager and host name verification; pin or add a trust"
        " store for private CAs instead of disabling checks.",
    ),
    311: Weakness(
        "Missing encryption of sensitive data",
        "Sensitive data is stored or sent without encryption, so anyone who reaches the"
        " storage or the wire can read it.",
        "Encrypt sensitive data at rest with a vetted library and managed keys, and send it"
        " only over TLS.",
    ),
    315: Weakness(
        "Cleartext sensitive data in a cookie",
        "A cookie holds a secret or personal data in clear text, readable on the client, in"
        " proxies and in browser storage.",
        "Keep the data on the server and put only an opaque session id in the cookie; if"
        " data must travel, encrypt and authenticate it.",
    ),
    319: Weakness(
        "Cleartext transmission of sensitive data",
        "Sensitive data goes over plain HTTP or another unencrypted channel.",
        "Use TLS (https, ldaps, TLS-enabled database drivers) for every connection that"
        " carries credentials or personal data, and redirect plain HTTP.",
    ),
    321: Weakness(
        "Hard-coded cryptographic key",
        "A key written in the source protects nothing: whoever has the code can decrypt or"
        " forge what it protects, and it cannot be rotated per deployment.",
        "Generate keys per deployment and load them from a key store or secret manager;"
        " rotate the committed key and re-encrypt what it protected.",
    ),
    326: Weakness(
        "Inadequate encryption strength",
        "The key is too short for the algorithm to resist brute force today.",
        "Use at least 2048-bit RSA, 256-bit elliptic curves and 128-bit (better 256-bit)"
        " symmetric keys.",
    ),
    327: Weakness(
        "Broken or risky cryptographic algorithm",
        "DES, 3DES, RC2, RC4, Blowfish or ECB mode no longer protect data: keys can be"
        " searched or patterns in the plaintext show through.",
        "Use AES with an authenticated mode (`AES/GCM/NoPadding`) and a fresh random IV per"
        " message, or a high-level library that chooses for you.",
    ),
    328: Weakness(
        "Weak hash",
        "MD2, MD4, MD5 and SHA-1 allow collisions, and any fast hash lets stolen password"
        " hashes be guessed at scale.",
        "Use SHA-256 or stronger for integrity; for passwords use a slow, salted password"
        " hash (bcrypt, scrypt, Argon2, PBKDF2).",
    ),
    330: Weakness(
        "Insufficiently random values",
        "`java.util.Random`, `Math.random` and `ThreadLocalRandom` are predictable: after a"
        " few outputs the next ones can be computed, so tokens, ids or passwords made from"
        " them can be guessed.",
        "Use `java.security.SecureRandom` for every value that must be unguessable (tokens,"
        " session ids, reset codes, keys, salts).",
    ),
    338: Weakness(
        "Cryptographically weak random number generator",
        "A statistical PRNG is used where an attacker must not predict the value.",
        "Use `java.security.SecureRandom` (or the platform's strong instance) for security values.",
    ),
    352: Weakness(
        "Cross-site request forgery",
        "A state-changing request is accepted without proof that the user meant it, so"
        " another site can make the browser send it.",
        "Keep the framework's CSRF protection on and require a token for state-changing"
        " requests; use SameSite cookies as a second line.",
    ),
    470: Weakness(
        "Unsafe reflection",
        "A class or method chosen by outside data (`Class.forName`, `getMethod`) lets the"
        " caller instantiate or call code the developers never meant to expose.",
        "Map an allow-listed key to the class or handler to use; never pass input to"
        " `Class.forName` or reflective lookups.",
    ),
    501: Weakness(
        "Trust boundary violation",
        "Unvalidated request data is stored next to trusted data (e.g. in the session), so"
        " later code trusts it as if the application had checked it.",
        "Validate data before it crosses into trusted storage, and keep unchecked input in"
        " separate, clearly named places.",
    ),
    502: Weakness(
        "Deserialization of untrusted data",
        "Deserializing data an attacker controls (Java serialization, XMLDecoder, polymorphic"
        " JSON typing) can instantiate gadget classes and run code on the server.",
        "Do not deserialize untrusted data with native serialization; use a data-only format"
        " (JSON into fixed types, without default typing). If unavoidable, restrict classes"
        " with an `ObjectInputFilter` allow-list.",
    ),
    532: Weakness(
        "Sensitive information in a log file",
        "Passwords, tokens, card numbers or personal data written to logs reach everyone"
        " who can read the logs and every system they are shipped to.",
        "Do not log secrets; mask or omit sensitive fields, and log ids instead of the data.",
    ),
    601: Weakness(
        "Open redirect",
        "A redirect target taken from outside data sends users to any site, lending the"
        " application's name to phishing.",
        "Redirect only to relative paths or to an allow-list of destinations, chosen by key"
        " rather than by URL.",
    ),
    611: Weakness(
        "XML external entities (XXE)",
        "An XML parser that resolves external entities lets a document read local files,"
        " reach internal hosts or exhaust memory.",
        "Disable DOCTYPE declarations (`disallow-doctype-decl`) or external entities and"
        " external DTDs on every parser factory; prefer a parser configured securely by"
        " default.",
    ),
    614: Weakness(
        "Cookie without the Secure flag",
        "A cookie without `Secure` is also sent over plain HTTP, where it can be read on"
        " the network.",
        "Call `setSecure(true)` on every cookie (and set `HttpOnly` and `SameSite`), or"
        " configure the session cookie as secure.",
    ),
    643: Weakness(
        "XPath injection",
        "An XPath expression built from outside data can be rewritten to select other"
        " nodes, e.g. to bypass a login check.",
        "Use XPath variables (`XPathVariableResolver`) for values instead of building the"
        " expression text, or validate input against an allow-list.",
    ),
    798: Weakness(
        "Hard-coded credentials",
        "Credentials in the source (passwords, API keys, tokens) are shared with everyone"
        " who reads the code or the artifact and cannot be rotated without a release.",
        "Load credentials at run time from a secret manager or the environment, and revoke"
        " the committed ones.",
    ),
    917: Weakness(
        "Expression language injection",
        "Outside data evaluated as an EL/SpEL/OGNL expression can call arbitrary methods.",
        "Never evaluate input as an expression; use a restricted evaluation context and"
        " fixed expressions with variables.",
    ),
    918: Weakness(
        "Server-side request forgery",
        "A URL from outside data makes the server call internal services or cloud metadata.",
        "Fetch only allow-listed hosts and schemes, resolve and check the address, and block"
        " internal ranges.",
    ),
    1004: Weakness(
        "Cookie without HttpOnly",
        "Script in the page can read a cookie without `HttpOnly`, so an XSS steals it.",
        "Set `HttpOnly` on session and other sensitive cookies.",
    ),
}

# Rules whose tier the id does not show (API and configuration rules of the pack, clause
# matches): how often a report of theirs is a real weakness.
RULE_PRECISION: dict[str, str] = {
    "zhixing.crypto.weak-cipher": "high",  # the algorithm string itself is the weakness
    "zhixing.hash.weak-digest": "high",
    "zhixing.securecookie.insecure-cookie": "high",
    "zhixing.trustbound.session-write": "high",  # traced request data, as a tainted rule
    "zhixing.weakrand.predictable-random": "medium",  # whether the value guards anything varies
    "zhixing.clause.forbidden-api": "low",  # an identifier named by a clause, found by name
}


def precision(rule_id: str) -> str:
    """The SARIF `precision` of a rule, from its tier: request data traced to a sink
    (``*.tainted-*``) "high"; a sink assembled from a parameter with no traced data
    (``*.concatenated-*``) and a topic's line pattern (``zhixing.pattern.*``) "low"; the
    model "medium"; any other rule of the pack "medium" unless `RULE_PRECISION` says."""
    if rule_id in RULE_PRECISION:
        return RULE_PRECISION[rule_id]
    if ".tainted-" in rule_id:
        return "high"
    if ".concatenated-" in rule_id or rule_id.startswith("zhixing.pattern."):
        return "low"
    return "medium"


def security_severity(cwes: Sequence[int]) -> str:
    """The `security-severity` of a rule that reports these CWEs: the gravest, as "N.N"."""
    known = [SECURITY_SEVERITY.get(c, DEFAULT_SECURITY_SEVERITY) for c in cwes if c]
    return f"{max(known, default=DEFAULT_SECURITY_SEVERITY):.1f}"


def _tier_note(rule_id: str) -> str:
    if ".tainted-" in rule_id:
        return (
            "Zhixing traced request data from where it is read to this call; the result's"
            " code flow shows the path."
        )
    if ".concatenated-" in rule_id:
        return (
            "A structural finding: the text is assembled from a method parameter, but no"
            " request data was traced to it. Check what the callers pass before fixing."
        )
    if rule_id.startswith("zhixing.pattern."):
        return (
            "A line pattern matched; no data flow was traced. Read the code around the"
            " line to confirm it."
        )
    if rule_id == "zhixing.clause.forbidden-api":
        return (
            "A clause of the attached knowledge forbids this API; the match is by name, so"
            " confirm that the call is the one the clause means."
        )
    if rule_id == "model":
        return (
            "Reported by the language model that carried out the subtask; review it before"
            " acting on it."
        )
    return ""


def _generated(rule: AuditRule, cwe: int) -> Weakness:
    """Help for a CWE this module does not describe, from the rule itself."""
    return Weakness(
        rule.title,
        rule.description,
        f"See the CWE-{cwe} entry for the weakness and its mitigations; remove the cause at"
        " the flagged line (keep untrusted data out of the operation, or validate it against"
        " an allow-list first) rather than filtering its symptoms.",
    )


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|"})


def _md(text: str) -> str:
    """Text from data (a rule's title, a clause heading) as literal Markdown."""
    return text.translate(_MD_SPECIAL)


def rule_help(rule: AuditRule, cwes: Sequence[int], clauses: Sequence[str] = ()) -> dict[str, str]:
    """SARIF `help` (a multiformatMessageString) for a rule: the rule, each weakness it
    reports (what it is, how to fix it), how far to trust it, and the clauses its findings
    cite. `cwes`: the CWEs of the rule and of its findings, zeros left out."""
    text = [f"{rule.title}.", rule.description]
    md = [f"**{_md(rule.title)}**", _md(rule.description)]
    for cwe in dict.fromkeys(c for c in cwes if c):
        weak = WEAKNESSES.get(cwe) or _generated(rule, cwe)
        text += [f"CWE-{cwe}, {weak.name}: {weak.risk}", f"How to fix: {weak.fix}"]
        md += [
            f"### CWE-{cwe}: {weak.name}",
            weak.risk,
            f"**How to fix.** {weak.fix}",
            f"[CWE-{cwe}](https://cwe.mitre.org/data/definitions/{cwe}.html)",
        ]
    if not any(cwes):
        text.append("How to fix: read the reported line and the clause it cites, if any.")
    note = _tier_note(rule.id)
    if note:
        text.append(note)
        md.append(f"*{note}*")
    if clauses:
        text.append("Clause cited: " + "; ".join(clauses))
        md += ["### Clause cited", "\n".join(f"- {_md(c)}" for c in clauses)]
    return {"text": "\n\n".join(text), "markdown": "\n\n".join(md)}
