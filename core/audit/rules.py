"""The built-in rule pack: Zhixing's own rules, written from general Java security knowledge.

Each rule here is data (id, CWE, title, one-line description); the interpreter (``calls``,
``checks``) decides when it fires. ``*.tainted-*`` rules follow outside data (any source kind of
:mod:`.untrusted`) to a sink;
``*.concatenated-*`` rules are structural: a query-language sink whose text is assembled from
a parameter of the enclosing method, reported with low confidence when no outside data was
traced there. Nothing in this pack is tuned to any particular test suite.
"""

from __future__ import annotations

from .model import AuditRule

BUILTIN_RULES: tuple[AuditRule, ...] = (
    AuditRule(
        "zhixing.cmdi.concatenated-command",
        78,
        "OS command built by concatenating a method parameter",
        "A command line passed to Runtime.exec or ProcessBuilder is assembled from a method"
        " parameter; no outside data was traced to it, so check what callers pass.",
    ),
    AuditRule(
        "zhixing.cmdi.tainted-command",
        78,
        "OS command built from outside data",
        "Outside data reaches Runtime.exec or a ProcessBuilder command or environment.",
    ),
    AuditRule(
        "zhixing.config.tainted-setting",
        15,
        "Database setting chosen by outside data",
        "Outside data selects the catalog or schema of a JDBC connection (setCatalog,"
        " setSchema): external control of a system setting.",
    ),
    AuditRule(
        "zhixing.crypto.short-key",
        326,
        "Key pair too short",
        "A KeyPairGenerator for RSA, DSA or Diffie-Hellman is initialised below 2048 bits (EC"
        " below 224): too weak to last.",
    ),
    AuditRule(
        "zhixing.crypto.weak-cipher",
        327,
        "Weak or broken cipher",
        "Cipher/KeyGenerator with DES, 3DES, RC2, RC4, Blowfish or ECB mode.",
    ),
    AuditRule(
        "zhixing.deser.untrusted-stream",
        502,
        "Deserialisation of outside data",
        "An ObjectInputStream or XMLDecoder reads a stream that comes from the network, a"
        " request, a file or a message: the bytes choose which classes are instantiated.",
    ),
    AuditRule(
        "zhixing.hash.weak-digest",
        328,
        "Weak hash algorithm",
        "MessageDigest or DigestUtils with MD2, MD4, MD5 or SHA-1.",
    ),
    AuditRule(
        "zhixing.httpsplit.tainted-header",
        113,
        "HTTP header or cookie built from outside data",
        "Outside data reaches a response header (setHeader, addHeader) or a cookie added to"
        " the response without its CR and LF removed or URL-encoded (response splitting).",
    ),
    AuditRule(
        "zhixing.ldapi.concatenated-filter",
        90,
        "LDAP filter built by concatenating a method parameter",
        "A directory search name or filter is assembled from a method parameter; no outside"
        " data was traced to it, so check what callers pass.",
    ),
    AuditRule(
        "zhixing.ldapi.tainted-filter",
        90,
        "LDAP query built from outside data",
        "Outside data reaches the name or filter of a directory search.",
    ),
    AuditRule(
        "zhixing.pathtraver.tainted-path",
        22,
        "File path built from outside data",
        "Outside data reaches a File, stream, Path or Files call as a path.",
    ),
    AuditRule(
        "zhixing.redirect.tainted-url",
        601,
        "Redirect to a URL from outside data",
        "Outside data chooses the target of sendRedirect (open redirect): check it against an"
        " allow-list of destinations or keep redirects relative.",
    ),
    AuditRule(
        "zhixing.reflection.tainted-class-name",
        470,
        "Class chosen by outside data",
        "Outside data names the class that Class.forName or ClassLoader.loadClass loads"
        " (unsafe reflection): map input to a fixed set of classes instead.",
    ),
    AuditRule(
        "zhixing.securecookie.insecure-cookie",
        614,
        "Cookie without the Secure flag",
        "A cookie is added to the response without setSecure(true).",
    ),
    AuditRule(
        "zhixing.sqli.concatenated-query",
        89,
        "SQL built by concatenating a method parameter",
        "SQL text is assembled from a method parameter by concatenation, String.format or a"
        " StringBuilder instead of bind parameters; no outside data was traced to it.",
    ),
    AuditRule(
        "zhixing.sqli.tainted-query",
        89,
        "SQL built from outside data",
        "Outside data reaches the SQL text of a JDBC, JdbcTemplate or JPA/Hibernate call.",
    ),
    AuditRule(
        "zhixing.trustbound.session-write",
        501,
        "Outside data stored in the session",
        "Outside data is written into HttpSession attributes (trust boundary).",
    ),
    AuditRule(
        "zhixing.weakrand.predictable-random",
        330,
        "Predictable random value",
        "java.util.Random, Math.random or ThreadLocalRandom feeds a security-relevant value.",
    ),
    AuditRule(
        "zhixing.xpathi.concatenated-expression",
        643,
        "XPath expression built by concatenating a method parameter",
        "An XPath expression is assembled from a method parameter; no outside data was"
        " traced to it, so check what callers pass.",
    ),
    AuditRule(
        "zhixing.xpathi.tainted-expression",
        643,
        "XPath expression built from outside data",
        "Outside data reaches XPath.compile or XPath.evaluate as the expression.",
    ),
    AuditRule(
        "zhixing.xss.tainted-output",
        79,
        "Outside data written to the response",
        "Outside data reaches the response writer or stream, or the message of an error page"
        " (sendError), without HTML encoding.",
    ),
    # Secrets in code and secrets sent in clear text (credentials.py, exposure.py): judged by
    # the APIs that take a password or key and by what a name says a value holds.
    AuditRule(
        "zhixing.secrets.hardcoded-credential",
        798,
        "Hard-coded credential",
        "A literal password, key, token or API key is assigned to a variable, field or property"
        " whose name says it holds one, or passed where an API takes a password or key"
        " (DriverManager.getConnection, KeyStore.load, PBEKeySpec, SecretKeySpec, setPassword).",
    ),
    AuditRule(
        "zhixing.weakrand.predictable-secret",
        338,
        "Predictable random value used as a secret",
        "A java.util.Random or Math.random value becomes key material, an IV, salt or nonce, a"
        " token, password or session id (a key spec, a secret's setter or variable).",
    ),
    AuditRule(
        "zhixing.cookie.cleartext-secret",
        315,
        "Secret stored in a cookie in clear text",
        "A password, credential or personal datum is stored as a cookie's value without a"
        " digest or cipher; plain Base64 is no protection.",
    ),
    AuditRule(
        "zhixing.transport.cleartext-credentials",
        319,
        "Credentials sent in clear text",
        "A secret is written to a plain Socket or an http:// connection, or an http:// URL to"
        " another host carries a user:password or a secret query parameter.",
    ),
)
# New rules are appended to the table above (a merge adds lines at one end); the pack lists
# its rules by id.
BUILTIN_RULES = tuple(sorted(BUILTIN_RULES, key=lambda r: r.id))

# Second-tier rules: a query assembled from a parameter, reported when no taint reaches it.
STRUCTURAL_RULE_IDS = frozenset(r.id for r in BUILTIN_RULES if ".concatenated-" in r.id)
RULE_FOR_CWE: dict[int, AuditRule] = {
    r.cwe: r for r in BUILTIN_RULES if r.id not in STRUCTURAL_RULE_IDS
}
STRUCTURAL_RULE_FOR_CWE: dict[int, AuditRule] = {
    r.cwe: r for r in BUILTIN_RULES if r.id in STRUCTURAL_RULE_IDS
}
