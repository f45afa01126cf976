"""Java API knowledge of the built-in pack: sources, sinks, sanitisers, propagation, weak algorithms.

All of it comes from the public Servlet, JDBC, JNDI, JAXP, NIO, JCA and Spring APIs and from
common encoder libraries (OWASP ESAPI / Java Encoder, Apache Commons, Spring HtmlUtils).
Types are matched on simple names, since the engine has no classpath.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- sources -------------------------------------------------------------------------------
# Request accessors; the receiver must look like a request when its type is known.
SOURCE_METHODS: dict[str, str | None] = {
    "getParameter": "String",
    "getParameterValues": "String[]",
    "getParameterMap": "Map",
    "getParameterNames": "Enumeration",
    "getHeader": "String",
    "getHeaders": "Enumeration",
    "getHeaderNames": "Enumeration",
    "getCookies": "Cookie[]",
    "getQueryString": "String",
    "getInputStream": "InputStream",
    "getReader": "BufferedReader",
    "getRequestURI": "String",
    "getRequestURL": "StringBuffer",
    "getPathInfo": "String",
    "getPart": "Part",
    "getParts": "Collection",
    "getRemoteUser": "String",
}
# Accessors whose name alone is specific enough when the receiver's type is unknown.
SOURCE_BY_NAME_ONLY = frozenset(
    {
        "getParameter",
        "getParameterValues",
        "getParameterMap",
        "getParameterNames",
        "getQueryString",
        "getCookies",
        "getHeaders",
        "getHeaderNames",
    }
)
SPRING_SOURCE_ANNOTATIONS = frozenset(
    {
        "RequestParam",
        "PathVariable",
        "RequestBody",
        "RequestHeader",
        "CookieValue",
        "RequestPart",
        "MatrixVariable",
        "ModelAttribute",
    }
)


def is_request_type(typ: str | None) -> bool:
    return typ is not None and "Request" in typ and "Response" not in typ


# --- sinks ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sink:
    cwe: int
    methods: frozenset[str]
    types: tuple[str, ...]  # receiver simple-type suffixes; () = any receiver
    args: tuple[int, ...] | None  # argument positions that matter; None = all
    name_only: frozenset[str] = frozenset()  # methods accepted when the receiver type is unknown


_SQL_EXEC = frozenset(
    {
        "execute",
        "executeQuery",
        "executeUpdate",
        "executeLargeUpdate",
        "addBatch",
        "prepareStatement",
        "prepareCall",
        "nativeSQL",
    }
)
_JDBC_TEMPLATE = frozenset(
    {
        "query",
        "queryForObject",
        "queryForList",
        "queryForMap",
        "queryForRowSet",
        "queryForLong",
        "queryForInt",
        "queryForStream",
        "update",
        "execute",
    }
)
_FILES = frozenset(
    {
        "newInputStream",
        "newOutputStream",
        "readAllBytes",
        "readAllLines",
        "lines",
        "write",
        "writeString",
        "readString",
        "copy",
        "move",
        "delete",
        "deleteIfExists",
        "createFile",
        "createDirectory",
        "createDirectories",
        "newBufferedReader",
        "newBufferedWriter",
        "list",
        "walk",
        "newByteChannel",
    }
)

CALL_SINKS: tuple[Sink, ...] = (
    Sink(
        89,
        _SQL_EXEC,
        ("Statement", "Connection"),
        (0,),
        frozenset({"executeQuery", "executeUpdate", "addBatch", "prepareStatement", "prepareCall"}),
    ),
    Sink(89, _JDBC_TEMPLATE, ("JdbcTemplate", "JdbcOperations"), (0,)),
    Sink(89, frozenset({"batchUpdate"}), ("JdbcTemplate", "JdbcOperations"), None),
    Sink(
        89,
        frozenset({"createQuery", "createSQLQuery", "createNativeQuery"}),
        ("Session", "EntityManager", "StatelessSession"),
        (0,),
        frozenset({"createSQLQuery", "createNativeQuery"}),
    ),
    Sink(78, frozenset({"exec"}), ("Runtime",), (0, 1), frozenset({"exec"})),
    Sink(78, frozenset({"command"}), ("ProcessBuilder",), None),
    Sink(
        90,
        frozenset({"search"}),
        ("DirContext", "LdapContext", "LdapTemplate", "LdapOperations"),
        (0, 1),
    ),
    Sink(643, frozenset({"evaluate", "compile"}), ("XPath",), (0,)),
    Sink(22, frozenset({"get", "of"}), ("Paths", "Path"), None),
    Sink(22, frozenset({"resolve", "resolveSibling"}), ("Path",), (0,)),
    Sink(22, _FILES - {"copy", "move"}, ("Files",), (0,)),  # the path; what is written is data
    Sink(22, frozenset({"copy", "move"}), ("Files",), (0, 1)),
    Sink(
        79,
        frozenset({"print", "println", "write", "printf", "format", "append"}),
        ("ResponseWriter",),
        None,
    ),
    Sink(501, frozenset({"setAttribute", "putValue"}), ("HttpSession",), (0, 1)),
    # response splitting: a header's name or value, a cookie (its name and value)
    Sink(113, frozenset({"setHeader", "addHeader"}), ("Response",), (0, 1)),
    Sink(113, frozenset({"addCookie"}), ("Response",), (0,), frozenset({"addCookie"})),
    Sink(601, frozenset({"sendRedirect"}), ("Response",), (0,), frozenset({"sendRedirect"})),
    # Spring: a response's Location (ResponseEntity builders, HttpHeaders)
    Sink(
        601, frozenset({"location"}), ("Builder", "ResponseEntity"), (0,), frozenset({"location"})
    ),
    Sink(601, frozenset({"setLocation"}), ("HttpHeaders",), (0,)),
    Sink(79, frozenset({"sendError"}), ("Response",), (1,), frozenset({"sendError"})),
    Sink(470, frozenset({"forName"}), ("Class",), (0,)),
    Sink(470, frozenset({"loadClass"}), ("ClassLoader",), (0,), frozenset({"loadClass"})),
    Sink(15, frozenset({"setCatalog", "setSchema"}), ("Connection",), (0,)),
)
# Type name endings of streams, readers, writers and channels: data, never a path.
STREAM_TYPES = ("Stream", "Reader", "Writer", "Channel")
# Deserialising a stream read from outside (CWE-502): the types whose readObject does it.
DESERIALIZERS = frozenset({"ObjectInputStream", "XMLDecoder", "ValidatingObjectInputStream"})
# Calls that limit which classes a stream may instantiate (JEP 290, Commons IO).
DESERIALIZATION_FILTERS = frozenset({"setObjectInputFilter", "accept"})
# Bytes the program serialised itself: reading them back is a round trip, not CWE-502.
OWN_BYTES = frozenset({("ByteArrayOutputStream", "toByteArray")})
READ_OBJECT = frozenset({"readObject", "readUnshared"})
# Constructors whose arguments are file paths (CWE-22) or a command line (CWE-78).
CTOR_SINKS: dict[str, int] = {
    "File": 22,
    "FileInputStream": 22,
    "FileOutputStream": 22,
    "FileReader": 22,
    "FileWriter": 22,
    "RandomAccessFile": 22,
    "ProcessBuilder": 78,
    "RedirectView": 601,
}
# Where a predictable random value becomes security-relevant (cookie, session, response).
RANDOM_SINK_CWES = frozenset({501, 79})

# --- sanitisers and propagation ------------------------------------------------------------
_HTML = frozenset({79})
SANITIZERS: dict[str, frozenset[int]] = {
    **dict.fromkeys(
        (
            "encodeForHTML",
            "encodeForHTMLAttribute",
            "encodeForJavaScript",
            "encodeForCSS",
            "encodeForURL",
            "encodeForXML",
            "encodeForXMLAttribute",
            "escapeHtml",
            "escapeHtml3",
            "escapeHtml4",
            "escapeXml",
            "escapeXml10",
            "escapeXml11",
            "escapeEcmaScript",
            "htmlEscape",
            "forHtml",
            "forHtmlContent",
            "forHtmlAttribute",
            "forJavaScript",
            "forXml",
            "forUriComponent",
        ),
        _HTML,
    ),
    # XML escaping turns both quote characters into entities: a value escaped so cannot leave
    # the string literal of an XPath expression it is placed in.
    **dict.fromkeys(
        (
            "encodeForXML",
            "encodeForXMLAttribute",
            "escapeXml",
            "escapeXml10",
            "escapeXml11",
            "forXml",
            "forXmlAttribute",
        ),
        frozenset({79, 643}),
    ),
    "encodeForSQL": frozenset({89}),
    "encodeForLDAP": frozenset({90}),
    "encodeForDN": frozenset({90}),
    "encodeForXPath": frozenset({643}),
    "encodeForOS": frozenset({78}),
    "getName": frozenset({22}),  # only as FilenameUtils.getName (checked by the caller)
    "getBaseName": frozenset({22}),
    "filterEncode": frozenset({90}),  # Spring LdapEncoder
    "nameEncode": frozenset({90}),
    "escapeValue": frozenset({90}),  # javax.naming.ldap.Rdn
}
# Static sanitisers named by class and method: URL encoding leaves no CR, LF or markup.
STATIC_SANITIZERS: dict[tuple[str, str], frozenset[int]] = {
    ("URLEncoder", "encode"): frozenset({113, 79}),
}
REPLACERS = frozenset({"replace", "replaceAll"})  # calls that replace text (judgements.py)
FILENAME_UTILS = frozenset({"FilenameUtils"})
NUMERIC_TYPES = frozenset(
    {
        "Integer",
        "Long",
        "Short",
        "Byte",
        "Double",
        "Float",
        "Boolean",
        "BigInteger",
        "BigDecimal",
        "UUID",
    }
)
NUMERIC_PARSERS = frozenset(
    {
        "parseInt",
        "parseLong",
        "parseShort",
        "parseByte",
        "parseDouble",
        "parseFloat",
        "parseBoolean",
        "parseUnsignedInt",
        "parseUnsignedLong",
    }
)
# Results that carry no attacker-controlled text, whatever the receiver and arguments.
NON_PROPAGATING = frozenset(
    {
        "length",
        "size",
        "isEmpty",
        "isBlank",
        "equals",
        "equalsIgnoreCase",
        "compareTo",
        "compareToIgnoreCase",
        "hashCode",
        "contains",
        "containsKey",
        "containsValue",
        "startsWith",
        "endsWith",
        "indexOf",
        "lastIndexOf",
        "matches",
        "hasNext",
        "hasMoreElements",
        "hasMoreTokens",
        "exists",
        "isDirectory",
        "isFile",
        "canRead",
        "canWrite",
        "getClass",
        "booleanValue",
        "nextBoolean",
        "getStatus",
        "delete",
        "mkdir",
        "mkdirs",
        "createNewFile",
        "close",
        "flush",
        "available",
        "codePointAt",
        "getFD",
    }
)
# Methods whose result is a number or a flag whatever they are called on (a message's
# partition and offset, a stream's length, a port).
NUMERIC_RESULTS = frozenset(
    {
        "partition",
        "offset",
        "timestamp",
        "getContentLength",
        "getContentLengthLong",
        "getBodyLength",
        "getPort",
        "getLocalPort",
        "ordinal",
        "nextInt",
        "nextLong",
        "nextDouble",
        "getResponseCode",
        "exitValue",
        "waitFor",
    }
)
# Calls known to store their arguments in the receiver (a collection, a builder, settings):
# the ones that change a field they are made on (`this.queue.add(x)`).
MUTATORS = frozenset(
    {
        "add",
        "addAll",
        "addElement",
        "addFirst",
        "addLast",
        "offer",
        "push",
        "put",
        "putAll",
        "putIfAbsent",
        "compute",
        "merge",
        "set",
        "setProperty",
        "append",
        "insert",
        "load",
    }
)
# Lookups on a receiver: the result is what the receiver holds (or the default, the second
# argument), never the key or index asked for.
LOOKUPS = frozenset({"get", "getOrDefault", "getProperty", "elementAt"})
STRING_LIKE = frozenset({"String", "Integer", "Long", "Double", "Boolean", "Character"})
# Immutable values: a call on one that takes request data leaves the receiver itself clean.
IMMUTABLE = STRING_LIKE | {"Path", "URI", "Pattern"}
FRESH_LISTS = frozenset(
    {"ArrayList", "LinkedList", "Vector", "Stack", "ArrayDeque", "CopyOnWriteArrayList"}
)
FRESH_MAPS = frozenset(
    {"HashMap", "LinkedHashMap", "TreeMap", "Hashtable", "ConcurrentHashMap", "Properties"}
)
# Known library calls whose result type matters to sink matching.
RESULT_TYPES: dict[str, str] = {
    "getSession": "HttpSession",
    "getRuntime": "Runtime",
    "newXPath": "XPath",
    "createStatement": "Statement",
    "getConnection": "Connection",
    "getDirContext": "DirContext",
    "command": "ProcessBuilder",
    # results that sources (untrusted.py) are matched on
    "accept": "Socket",
    "openConnection": "URLConnection",
    "executeQuery": "ResultSet",
    "getResultSet": "ResultSet",
    "getGeneratedKeys": "ResultSet",
}
# Static factories whose result type matters to sink matching.
STATIC_RESULT_TYPES: dict[tuple[str, str], str] = {
    ("Paths", "get"): "Path",
    ("Path", "of"): "Path",
    ("Runtime", "getRuntime"): "Runtime",
    ("XPathFactory", "newInstance"): "XPathFactory",
    ("System", "console"): "Console",
}
# Calls whose result is text assembled from the receiver and arguments.
TEXT_ASSEMBLY = frozenset({"format", "formatted", "concat", "join", "append", "insert"})
# Query-language sinks also judged structurally: text assembled from a method parameter.
STRUCTURAL_CWES = frozenset({89, 78, 90, 643})
# Parameter types whose text cannot change a query's structure.
NON_TEXT_TYPES = frozenset(
    {"int", "long", "short", "byte", "double", "float", "boolean"}
    | {"Integer", "Long", "Short", "Byte", "Double", "Float", "Boolean"}
    | {"BigInteger", "BigDecimal", "UUID", "AtomicInteger", "AtomicLong"}
)
# Methods that write the receiver's data into an array argument.
FILLS_ARGUMENT = frozenset({"read", "readFully", "nextBytes", "getChars", "readNBytes"})
RESPONSE_STREAMS = frozenset({"getWriter", "getOutputStream"})
