"""The catalog of sources: every API through which outside data enters a Java program, as data.

A source is matched on the call (a method of a receiver type, a static method, a constructor, a
static field) or on a method's parameters (a Spring request binding, a message listener,
``main``'s arguments). Each belongs to one *kind*; a finding names the kind its data came from.
Every kind feeds every taint sink of the pack (SQL, OS command, LDAP, XPath, path, response
output, response headers and cookies, redirects, reflection, configuration, the session):
``KINDS`` documents what each kind covers and the CWEs it is the usual source of. The catalog
grows by entries, not code. Types are matched on simple names (the engine has no classpath),
a receiver type by suffix (``Socket`` covers ``SSLSocket``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SourceKind = Literal[
    "request",
    "environment",
    "system-property",
    "properties-file",
    "file",
    "network",
    "console",
    "database",
    "deserialization",
    "message",
    "command-line",
]


@dataclass(frozen=True)
class KindInfo:
    """What one source kind is: the words a trace uses, a description, the CWEs it usually
    feeds, and whether an attacker needs local access to control it (lower confidence)."""

    read: str
    covers: str
    cwes: tuple[int, ...]
    local: bool = False


_INJECTION = (22, 78, 79, 89, 90, 113, 470, 601, 643, 15)
KINDS: dict[str, KindInfo] = {
    "request": KindInfo(
        "request data read",
        "servlet request parameters, headers, cookies, body, path; Spring request bindings",
        (*_INJECTION, 501, 502),
    ),
    "environment": KindInfo("environment variable read", "System.getenv", _INJECTION, local=True),
    "system-property": KindInfo(
        "system property read", "System.getProperty", _INJECTION, local=True
    ),
    "properties-file": KindInfo(
        "setting read from a properties file",
        "Properties.load from a file or stream that is itself outside data",
        _INJECTION,
        local=True,
    ),
    "file": KindInfo(
        "file content read",
        "FileInputStream, FileReader, RandomAccessFile, Files.read*/lines/newBufferedReader",
        (*_INJECTION, 502),
    ),
    "network": KindInfo(
        "network input read",
        "sockets (client and server), URL connections, URL.openStream, HTTP client bodies,"
        " datagrams (a password read so and used as one travelled in clear text: CWE-319)",
        (*_INJECTION, 502, 319),
    ),
    "console": KindInfo(
        "console input read", "System.in, Console.readLine/readPassword", _INJECTION, local=True
    ),
    "database": KindInfo(
        "database value read", "JDBC ResultSet getters (stored data: second-order)", _INJECTION
    ),
    "deserialization": KindInfo(
        "deserialised object read", "ObjectInputStream.readObject of outside bytes", _INJECTION
    ),
    "message": KindInfo(
        "message payload read",
        "JMS, Kafka, AMQP and Spring messaging payloads; listener method parameters",
        (*_INJECTION, 502),
    ),
    "command-line": KindInfo(
        "command-line argument read", "the parameter of main(String[])", _INJECTION, local=True
    ),
}


@dataclass(frozen=True)
class CallSource:
    """Calls ``name`` on a receiver whose type ends with one of ``types`` (instance methods) or
    on the class ``static`` (static methods); the result is outside data of ``kind``."""

    kind: SourceKind
    methods: frozenset[str]
    types: tuple[str, ...] = ()
    static: str | None = None
    result: str | None = None  # the result's simple type, when it matters downstream


CALL_SOURCES: tuple[CallSource, ...] = (
    CallSource("environment", frozenset({"getenv"}), static="System"),
    CallSource("system-property", frozenset({"getProperty"}), static="System", result="String"),
    CallSource(
        "file",
        frozenset({"readAllLines", "readString", "readAllBytes", "lines", "newBufferedReader"}),
        static="Files",
    ),
    CallSource("file", frozenset({"newInputStream"}), static="Files", result="InputStream"),
    CallSource("console", frozenset({"readLine", "readPassword"}), ("Console",)),
    CallSource("network", frozenset({"getInputStream"}), ("Socket",), result="InputStream"),
    CallSource(
        "network",
        frozenset({"getInputStream", "getErrorStream"}),
        ("URLConnection",),
        result="InputStream",
    ),
    CallSource("network", frozenset({"getContent", "getHeaderField"}), ("URLConnection",)),
    CallSource("network", frozenset({"openStream"}), ("URL",), result="InputStream"),
    CallSource("network", frozenset({"getContent"}), ("URL",)),
    CallSource("network", frozenset({"body"}), ("HttpResponse",)),
    CallSource("network", frozenset({"getData"}), ("DatagramPacket",)),
    CallSource(
        "database",
        frozenset(
            {
                "getString",
                "getNString",
                "getObject",
                "getClob",
                "getNClob",
                "getCharacterStream",
                "getNCharacterStream",
                "getAsciiStream",
                "getBinaryStream",
                "getBytes",
                "getSQLXML",
            }
        ),
        ("ResultSet", "RowSet"),
    ),
    CallSource(
        "database",
        frozenset(
            {"queryForList", "queryForMap", "queryForObject", "queryForRowSet", "queryForStream"}
        ),
        ("JdbcTemplate", "JdbcOperations"),
    ),
    CallSource("message", frozenset({"getText"}), ("TextMessage",)),
    CallSource(
        "message",
        frozenset({"getBody", "getPayload", "getStringProperty", "getObject"}),
        ("Message",),
    ),
    CallSource(
        "message",
        frozenset({"getString", "getObject", "getBytes", "getMapNames"}),
        ("MapMessage",),
    ),
    CallSource("message", frozenset({"value", "key"}), ("ConsumerRecord",)),
    CallSource("message", frozenset({"poll"}), ("Consumer",)),
    CallSource("message", frozenset({"getBody"}), ("Delivery",)),
)
# Constructors whose new object reads outside data (and is also a path sink: java_api).
CTOR_SOURCES: dict[str, SourceKind] = {
    "FileInputStream": "file",
    "FileReader": "file",
    "RandomAccessFile": "file",
}
# Calls that fill an argument (a buffer, a packet) with outside data.
FILLERS: dict[tuple[str, str], SourceKind] = {
    ("BytesMessage", "readBytes"): "message",
    ("StreamMessage", "readBytes"): "message",
    ("DatagramSocket", "receive"): "network",
}
# Calls that deserialise outside bytes themselves (CWE-502 at the call).
DESERIALIZING: dict[tuple[str, str], SourceKind] = {("ObjectMessage", "getObject"): "message"}
# Static fields that are outside data.
FIELD_SOURCES: dict[tuple[str, str], SourceKind] = {("System", "in"): "console"}
# Calls that fill their receiver from an argument: ``props.load(stream)`` makes the receiver
# outside data of this kind when what it loads from is outside data.
LOADERS: dict[tuple[str, str], SourceKind] = {("Properties", "load"): "properties-file"}
# Method annotations whose parameters are message payloads (listener endpoints).
LISTENER_ANNOTATIONS = frozenset(
    {
        "KafkaListener",
        "JmsListener",
        "RabbitListener",
        "SqsListener",
        "StreamListener",
        "MessageMapping",
        "KafkaHandler",
        "RabbitHandler",
    }
)


def call_source(name: str, static_cls: str | None, rtype: str | None) -> CallSource | None:
    """The source a call ``name`` (on the class ``static_cls``, or on a receiver of type
    ``rtype``) is; None when it is none."""
    for s in CALL_SOURCES:
        if name not in s.methods:
            continue
        if s.static is not None:
            if static_cls == s.static:
                return s
        elif static_cls is None and rtype and any(rtype.endswith(t) for t in s.types):
            return s
    return None


def is_main(name: str, static: bool, params: list[tuple[str, str, list[str]]]) -> bool:
    """Whether a method is a program's entry point, ``static void main(String[] args)``."""
    return name == "main" and static and len(params) == 1 and params[0][1] == "String[]"


def _of(
    table: dict[tuple[str, str], SourceKind], name: str, rtype: str | None
) -> SourceKind | None:
    return next(
        (k for (t, m), k in table.items() if m == name and rtype and rtype.endswith(t)), None
    )


def filler(name: str, rtype: str | None) -> SourceKind | None:
    """The kind of outside data ``recv.name(buffer)`` writes into its argument, if any."""
    return _of(FILLERS, name, rtype)


def deserialises(name: str, rtype: str | None) -> SourceKind | None:
    """The kind of outside bytes ``recv.name()`` deserialises itself (``ObjectMessage
    .getObject``: a message's), or None."""
    return _of(DESERIALIZING, name, rtype)
