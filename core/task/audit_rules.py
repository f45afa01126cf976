"""The offline heuristics of the task agent: the risk-pattern table, sections, offline scans.

Offline (no LLM), the revised plan comes from the knowledge: every section the research found
whose heading names a known audit topic (SQL injection, XSS, deserialization, logging, keys,
path traversal, command injection) becomes a subtask; a section that names risky APIs in
backticks but no known topic becomes a subtask that greps for those APIs. A subtask's scan
reports candidate findings, each marked "unconfirmed heuristic".

The rules are written so that the usual safe look-alikes do not match: SQL must be concatenated
on the line (a `PreparedStatement` with `?` is not), HTML output must not pass through an
escaping function, a logged password must not be masked, a key must be a literal (not read from
the environment or a `${...}` placeholder), and a `new File(base, name)` must not sit next to a
`normalize()`/`getCanonicalPath()` + `startsWith` check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .state import KnowledgeRef

__all__ = ["TOPICS", "Rule", "Section", "Topic", "clause_identifiers", "topic_for", "topic_named"]


@dataclass(frozen=True)
class Rule:
    """One risky pattern: a finding where `pattern` matches a line, unless an exception holds.

    `unless_line` cancels a match on the same line; `unless_near` one within `window` lines of
    it; `unless_file` one anywhere in the file; `requires_file` must match somewhere in the file
    (e.g. request input, for path traversal).
    """

    pattern: str
    title: str
    glob: str = "**/*.java"
    unless_line: str = ""
    unless_near: str = ""
    window: int = 4
    unless_file: str = ""
    requires_file: str = ""


@dataclass(frozen=True)
class Topic:
    """A known audit topic: how its sections are recognized and what its rules look for."""

    key: str
    name: str
    heading_words: tuple[str, ...]  # lower-case; matched against section headings
    probe: str  # the search query that looks up the topic's clause in the knowledge
    severity: str
    rules: tuple[Rule, ...]
    # The weaknesses (CWE ids) of the topic: the data-flow analysis's findings of these ids
    # belong to the topic's clause, and a clause that cites one of them names the topic.
    cwes: tuple[int, ...] = ()


_MASKED = r"(?i)mask|redact|desensiti|\*\*\*"
# Whatever comes before a match, with string literals taken whole: the match cannot start
# inside a literal.
_OUTSIDE_LITERALS = r'(?:"(?:[^"\\\n]|\\.)*"|[^"\n])*?'

# A constant that holds the *name* of an environment variable or setting is not a secret:
# named so (`..._ENV = `), or its value is such a name (capitals joined by underscores).
# "PRODKEY2024" is a value, not a name.
_NAMES_A_SETTING = (
    r"_(ENV|NAME|PARAM|HEADER|VAR|FIELD|PROPERTY)\s*=|=\s*\"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\""
)

TOPICS: tuple[Topic, ...] = (
    # Java request input reaching SQL, HTML output, file paths, OS commands, LDAP and XPath
    # is the data-flow analysis's (core.audit): no line pattern here for those.
    Topic(
        "sql",
        "SQL injection",
        ("sql",),
        "SQL 注入 拼接 Statement executeQuery PreparedStatement",
        "high",
        (),
        (89,),
    ),
    Topic(
        "xss",
        "Cross-site scripting (XSS)",
        ("xss", "跨站脚本", "cross-site scripting"),
        "跨站脚本 XSS 输出编码 htmlEscape getWriter",
        "high",
        (Rule(r"th:utext", "Thymeleaf th:utext renders unescaped HTML", glob="**/*.html"),),
        (79, 80),
    ),
    Topic(
        "deserialization",
        "Unsafe deserialization",
        ("反序列化", "deserializ"),
        "反序列化 ObjectInputStream readObject ObjectInputFilter",
        "high",
        (
            Rule(
                r"new\s+ObjectInputStream\s*\(|\.readObject\s*\(",
                "Java native deserialization (ObjectInputStream.readObject) without a class filter",
                unless_file=r"ObjectInputFilter|setObjectInputFilter|ValidatingObjectInputStream",
            ),
            Rule(r"new\s+XMLDecoder\s*\(", "XMLDecoder deserialization"),
            Rule(r"enableDefaultTyping\s*\(|activateDefaultTyping\s*\(", "Jackson default typing"),
        ),
        (502,),
    ),
    Topic(
        "logging",
        "Sensitive data in logs",
        ("日志", "logging", "log "),
        "日志 敏感信息 口令 password 脱敏",
        "medium",
        (
            # The secret must be a value outside the message's string literals: a message that
            # says "password reset requested" logs no password.
            Rule(
                r"(?i)\b(log|logger)\.(trace|debug|info|warn|error)\s*\("
                + _OUTSIDE_LITERALS
                + r"\b\w*(password|passwd|secret|token|口令|密码)",
                "Password or secret written to the log in clear text",
                unless_line=_MASKED,
            ),
            Rule(
                r"(?i)System\.(out|err)\.print(ln)?\s*\("
                + _OUTSIDE_LITERALS
                + r"\b\w*(password|passwd|secret|token)",
                "Password or secret printed to the console",
                unless_line=_MASKED,
            ),
        ),
        (532,),
    ),
    Topic(
        "secrets",
        "Hard-coded secrets",
        ("密钥", "硬编码", "凭据", "凭证", "secret", "hard-coded", "hardcoded", "credential"),
        "硬编码 密钥 SECRET_KEY System.getenv",
        "high",
        (
            Rule(
                r"\b[A-Z0-9_]*(SECRET|KEY|PASSWORD|PASSWD|TOKEN)[A-Z0-9_]*\s*=\s*\"[^\"]+\"",
                "Hard-coded secret in source code",
                unless_line=_NAMES_A_SETTING,
            ),
            Rule(
                r"(?i)\b(String|var|char\[\])\s+\w*(password|passwd|secret|apikey|api_key|token)\w*\s*=\s*\"[^\"]+\"",
                "Hard-coded password or secret in source code",
                unless_line=_NAMES_A_SETTING,
            ),
            Rule(r"new\s+SecretKeySpec\s*\(\s*\"", "Literal key passed to SecretKeySpec"),
            Rule(
                r"(?i)^\s*[\w.\-]*(password|secret|api-key|apikey|token)[\w.\-]*\s*[=:]\s*(?!\$\{)\S+",
                "Secret written literally in a configuration file",
                glob="**/*.properties",
            ),
        ),
        (798, 259, 321),
    ),
    Topic(
        "path",
        "Path traversal",
        ("路径遍历", "路径穿越", "目录遍历", "path traversal", "directory traversal"),
        "路径遍历 new File 文件名 normalize startsWith",
        "high",
        (),
        (22, 23, 35),
    ),
    Topic(
        "command",
        "Command injection",
        ("命令注入", "command injection", "os command"),
        "命令注入 Runtime exec ProcessBuilder",
        "high",
        (),
        (78, 77),
    ),
    Topic(
        "ldap",
        "LDAP injection",
        ("ldap",),
        "LDAP 注入 过滤器 DirContext search",
        "high",
        (),
        (90,),
    ),
    Topic(
        "xpath",
        "XPath injection",
        ("xpath",),
        "XPath 注入 表达式 evaluate",
        "high",
        (),
        (643,),
    ),
    Topic(
        "crypto",
        "Weak cryptography",
        ("加密算法", "密码算法", "弱加密", "cryptograph", "cipher", "encryption"),
        "加密算法 DES ECB AES GCM Cipher.getInstance",
        "medium",
        (),
        (327, 326),
    ),
    Topic(
        "hash",
        "Weak hashing",
        ("哈希", "散列", "摘要算法", "hash", "digest"),
        "哈希算法 MD5 SHA-1 MessageDigest SHA-256",
        "medium",
        (),
        (328,),
    ),
    Topic(
        "random",
        "Weak randomness",
        # Not "random" alone: "Random Padding" is a cipher's business, not a weak generator.
        ("随机数", "伪随机", "random number", "randomness", "prng", "securerandom"),
        "随机数 SecureRandom java.util.Random 令牌",
        "medium",
        (),
        (330, 338),
    ),
    Topic(
        "cookie",
        "Insecure cookies",
        ("cookie",),
        "Cookie Secure HttpOnly 属性",
        "medium",
        (),
        (614, 1004),
    ),
    Topic(
        "trust",
        "Trust boundary violation",
        ("信任边界", "trust boundary"),
        "信任边界 会话 session setAttribute 未校验",
        "medium",
        (),
        (501,),
    ),
)

_BY_KEY = {t.key: t for t in TOPICS}


def topic_named(key: str) -> Topic | None:
    """The topic with this key, or None."""
    return _BY_KEY.get(key)


def topic_for(heading: str, text: str = "") -> Topic | None:
    """The known topic a section heading names (the one with most heading words), else the
    one whose weakness the section's `text` cites first by CWE id, or None."""
    lowered = f" {heading.lower()} "
    best, score = None, 0
    for topic in TOPICS:
        found = sum(1 for w in topic.heading_words if w in lowered)
        if found > score:
            best, score = topic, found
    if best is None:
        for cwe in _CWE_ID.findall(text):
            best = next((t for t in TOPICS if int(cwe) in t.cwes), None)
            if best is not None:
                break
    return best


_CWE_ID = re.compile(r"\bCWE[-‐ ]?(\d{1,4})\b", re.IGNORECASE)


@dataclass
class Section:
    """A section of a document, as the research found it: heading, page and text so far."""

    document: str
    heading: str
    page: int
    line_start: int
    refs: list[KnowledgeRef]

    @property
    def text(self) -> str:
        return "\n".join(r.text for r in self.refs)


def sections_of(refs: Iterable[KnowledgeRef]) -> list[Section]:
    """Group knowledge references by (document, section), in document order."""
    groups: dict[tuple[str, str], Section] = {}
    for ref in refs:
        key = (ref.document, ref.section)
        line = ref.line_start
        section = groups.get(key)
        if section is None:
            groups[key] = Section(ref.document, ref.section, ref.page, line, [ref])
        elif ref.chunk_id not in {r.chunk_id for r in section.refs}:
            section.refs.append(ref)
            section.line_start = min(section.line_start, line)
            section.page = min(section.page, ref.page)
    return sorted(groups.values(), key=lambda s: (s.document, s.line_start, s.heading))


_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_IDENTIFIER = re.compile(r"^@?[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*(\(\))?$")
_PROHIBIT = re.compile(
    r"禁止|不得|严禁|避免|不要|不应|不允许|must not|never|avoid|do not|don't", re.IGNORECASE
)
_SENTENCE = re.compile(r"[^。；;！!\n]+")


def clause_identifiers(text: str, *, prohibited_only: bool = False) -> list[str]:
    """The code identifiers a clause names in backticks (`Statement.executeQuery`, ...).

    With `prohibited_only`, only those in a sentence that forbids something ("禁止…", "must
    not…"), so that the APIs a clause recommends (`PreparedStatement`) are left out.
    """
    found: list[str] = []
    for sentence in _SENTENCE.findall(text):
        if prohibited_only and not _PROHIBIT.search(sentence):
            continue
        for name in _BACKTICKED.findall(sentence):
            name = name.strip()
            if len(name) >= 4 and _IDENTIFIER.match(name) and name not in found:
                found.append(name)
    return found


def identifier_pattern(names: Sequence[str]) -> str:
    """One regex that finds uses of the identifiers: `A.method` as `.method(`, a class by name."""
    parts: list[str] = []
    for name in names:
        last = name.removesuffix("()").lstrip("@").rsplit(".", 1)[-1]
        if name.startswith("@"):
            part = "@" + re.escape(last) + r"\b"
        elif last[:1].islower():
            part = r"\b" + re.escape(last) + r"\s*\("
        else:
            part = r"\b" + re.escape(last) + r"\b"
        if part not in parts:
            parts.append(part)
    return "|".join(parts)
