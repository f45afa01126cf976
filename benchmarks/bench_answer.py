"""Offline answers, sentence by sentence (issues 17, 37): do they quote whole sentences that hold
the answer, never headings, with balanced markup, in English, in Chinese and across the two?

    python benchmarks/bench_answer.py [--sets sample,cmrc,asvs,cheatsheets-en,...] [--limit N]
                                      [--before PATH] [--label NAME]

Each set is built into a fresh knowledge base (offline, built-in embedder) and every question
is searched once, as the recall page does it (the default offline search, top 10), then
answered from those hits by `grounded_answer` without an LLM twice: `search`, as the recall
page asks (no aspects), and `agent`, as `ask`'s answer node asks (the offline plan's aspects,
core/ask/nodes.py; the hits of the question's own search stand for the merged evidence).
Retrieval is the product's own and the same for every run, so two runs differ only by the
answer code. `--before PATH` loads the answer module from a
copy of an older core/answer.py (the figures "before" a change); results go into
benchmarks/results/answer.json under the run's label (`before` with --before, else `after`),
keeping the other labels there.

Sets:
- `sample`: the shipped sample documents (app/samples/*.md) and 18 questions written for this
  benchmark, each with a reference span copied from the sample (below, not in product code).
- `cmrc`: the 500 questions of ../shared/data/eval/cmrc2018-500 over its 137 passages (a real
  search over all of them, so the other passages are the distractors), with the reference
  answers of the set (any of them counts).
- `asvs`: the Chinese OWASP ASVS 4.0.3 chapters V1-V14 (../shared/data/docs/asvs-4.0.3/zh-cn-md:
  headings, requirement tables, bold, links). One question per requirement section, written
  from its name ("会话绑定有哪些要求？"); a reference span is any requirement description of
  that section in the set's CSV. The questions are derived, not asked by users: the set is
  here for headings and markup in real documents more than for its answer rate.
- `cheatsheets-en` (issue 37's knowledge base): ten OWASP cheat sheets
  (../shared/data/docs/owasp-cheatsheets: authentication, password storage, sessions, forgotten
  passwords, input validation, SQL injection, XSS, cryptographic storage, logging, file upload)
  beside the whole Chinese ASVS (zh-cn-md). 29 English questions written as a user asks them
  (below): 19 answered by a cheat sheet (en→en; "How should passwords be stored?") and 10 by
  the Chinese ASVS (en→zh; "What does ASVS require for session tokens?"), each with reference
  spans copied from the document that answers it (checked against the documents at load).
  The questions a run missed are listed in the results (`missed`), their answers are not.
- `asvs-en`: `asvs` in English: the English chapters (en-md), one question per section from its
  English name ("What are the requirements for Session Binding?"), the spans from
  ASVS_4.0.3-en.csv. en→en.
- `asvs-en2zh`: the English questions of `asvs-en` over the Chinese chapters, the spans the
  Chinese CSV's descriptions of the same section (paired by section id). en→zh.
- `asvs-zh2en`: the Chinese questions of `asvs` over the English chapters, the spans the
  English CSV's. zh→en.

Each question records its pair (the question's language → the answering document's: en→en,
zh→zh, en→zh, zh→en; the sample's questions by their script), and every metric is also kept
per pair (`by_pair`). The table groups the rows by language (English, Chinese, cross-lingual)
and closes each group with its summary (`= all ...`: shares weighted by questions, `headings`
and `cut` by cited lines), per answer mode and run.

Metrics, per set:
- `contains`: the share of questions one of whose answer lines contains a reference span, both
  compared without spaces, punctuation or markup (a not-found answer contains nothing).
  Compared line by line, so two fragments on adjacent lines do not add up to a sentence.
- `found`: the share answered at all.
- `evidence`: the share whose hits (the top 10 the answer is written from) hold a reference
  span at all: what `contains` could reach with this retrieval. A miss with the span in no hit
  is the search's, not the answer's.
- `headings`: the share of cited answer lines that are a heading of the corpus (a Markdown `#`
  line of the source files, its number included or not) or a table's header row. Goal 0.
- `cut`: the share of cited lines that stop mid-sentence (the last character before `[n]` is a
  letter, digit or a joining word like 和/、/，, and the line is not a table row).
- `markup`: the share of answers with unbalanced markup in a line (an odd number of backticks
  or of `**`, or a bracket left open) or doubled punctuation ("？：", "。：") that the cited
  passages do not have themselves.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from zhixing.core.ask.nodes import MAX_ASPECTS  # noqa: E402
from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.search.query_terms import split_query  # noqa: E402
from zhixing.core.service import KnowledgeService  # noqa: E402

SAMPLES = sorted((ROOT / "app" / "samples").glob("*.md"))
CMRC = DATA / "eval" / "cmrc2018-500"
ASVS = DATA / "docs" / "asvs-4.0.3"
CHEATSHEETS = DATA / "docs" / "owasp-cheatsheets"
TOP_K = 10  # what the recall page asks for

# (question, reference span): spans copied from app/samples/*.md.
SAMPLE_QUESTIONS = [
    ("会话超时应该设置多久？", "空闲会话在 15 分钟后失效"),
    ("SQL注入如何防护", "访问数据库必须使用 PreparedStatement 参数化查询"),
    ("会话 Cookie 需要设置哪些属性？", "会话 Cookie 设置 HttpOnly、Secure 和 SameSite 属性"),
    ("密码应该如何存储？", "密码必须使用 bcrypt、scrypt 或 Argon2id 等自适应哈希算法加盐存储"),
    ("日志需要保存多久？", "日志至少保存 180 天"),
    ("日志中禁止出现哪些内容？", "日志中禁止出现密码、会话标识、令牌和完整的身份证号"),
    ("如何防止跨站脚本攻击？", "输出到 HTML 页面的数据必须按上下文编码"),
    ("反序列化有什么要求？", "禁止对不可信数据使用 Java 原生反序列化（ObjectInputStream）"),
    ("输入验证应该怎么做？", "验证采用白名单"),
    ("MyBatis 中允许使用哪种占位符？", "使用 MyBatis 时只允许 `#{}` 占位符"),
    ("bcrypt 的工作因子至少是多少？", "bcrypt 的工作因子不低于 10"),
    ("How long until idle sessions expire?", "Idle sessions expire after 15 minutes"),
    (
        "How many failed logins lock an account?",
        "Accounts lock for 15 minutes after 5 failed logins",
    ),
    ("Which TLS version must connections use?", "Use TLS 1.2 or later for every connection"),
    ("Where should encryption keys be kept?", "Keys live in a key management service"),
    ("Which Log4j versions are forbidden?", "Log4j versions before 2.17.1 are forbidden"),
    ("How should uploaded files be checked?", "Check the file type by content, not by extension"),
    ("What should the user see when an error occurs?", "show the user a generic message"),
]

# The ten OWASP cheat sheets of the `cheatsheets-en` set (beside the Chinese ASVS).
CHEATSHEET_NAMES = (
    "Authentication",
    "Password_Storage",
    "Session_Management",
    "Forgot_Password",
    "Input_Validation",
    "SQL_Injection_Prevention",
    "Cross_Site_Scripting_Prevention",
    "Cryptographic_Storage",
    "Logging",
    "File_Upload",
)
# (question, reference spans, pair): English questions as a user asks them; the spans are copied
# from the cheat sheet (en→en) or the Chinese ASVS (en→zh) that answers them, without link
# targets (an answer line keeps them, so a span across a link would never match).
CHEATSHEET_QUESTIONS = [
    (
        "How should passwords be stored?",
        [
            "with a minimum configuration of 19 MiB of memory",
            "with a minimum CPU/memory cost parameter of (2^17)",
            "use a work factor of 10 or more and with a password limit of 72 bytes",
            "with a work factor of 600,000 or more",
            "strong, slow hashing algorithms such as Argon2id, bcrypt, or PBKDF2",
            "modern, adaptive hashing algorithms (e.g., Argon2id, bcrypt, or PBKDF2)",
        ],
        "en→en",
    ),
    (
        "What does ASVS require for session tokens?",
        [
            "验证应用不会在URL参数中显示会话令牌",
            "验证应用程序在用户身份验证时，生成新的会话令牌",
            "验证会话令牌具有至少 64 位的熵",
            "仅使用安全方法在浏览器中存储会话令牌",
            "验证会话令牌是使用批准的加密算法生成的",
            "验证注销和到期是否会使会话令牌无效",
            "验证基于 cookie 的会话令牌是否设置了'Secure'属性",
            "验证基于 cookie 的会话令牌是否设置了'HttpOnly'属性",
            "验证基于cookie的会话令牌是否使用了'SameSite'属性",
            "验证应用程序使用会话令牌，而不是静态API密码或密钥",
            "验证无状态会话令牌是否使用数字签名、加密等对策",
        ],
        "en→zh",
    ),
    (
        "How much entropy should a session ID have?",
        ["must have at least `64 bits` of entropy", "contain at least `64 bits` of entropy"],
        "en→en",
    ),
    (
        "Which attributes should the session cookie have?",
        [
            "cookie attribute instructs web browsers not to allow scripts",
            "Secure; HttpOnly; SameSite=Strict",
        ],
        "en→en",
    ),
    (
        "When should the session ID be regenerated?",
        ["must be renewed or regenerated by the web application after any privilege level change"],
        "en→en",
    ),
    (
        "What is the minimum password length?",
        [
            "passwords **shorter than 8 characters** are considered to be weak",
            "passwords **shorter than 15 characters** are considered to be weak",
        ],
        "en→en",
    ),
    (
        "How long may a password be at most?",
        ["password length should be **at least 64 characters** to allow passphrases"],
        "en→en",
    ),
    (
        "What error message should a failed login show?",
        ["must respond with a generic error message regardless of whether"],
        "en→en",
    ),
    (
        "How do I protect accounts against brute-force login attempts?",
        ["implement account lockout, which prevents any more login attempts"],
        "en→en",
    ),
    (
        "How do I prevent SQL injection?",
        [
            "Use of Prepared Statements (with Parameterized Queries)",
            "use prepared statements with variable binding (aka parameterized queries)",
            "should be built or re-written using parameterized queries, stored procedures",
        ],
        "en→en",
    ),
    (
        "Should input validation use an allowlist or a denylist?",
        [
            "Allowlist validation is appropriate for all input fields provided by the user",
            "Allowlisting remains the more robust and secure approach",
            "it should supplement - not replace - allowlisting",
        ],
        "en→en",
    ),
    (
        "At which levels should input be validated?",
        ["Input validation should be applied at both syntactic and semantic levels"],
        "en→en",
    ),
    (
        "How can I prevent cross-site scripting?",
        [
            "Framework Security Protections, Output Encoding, and HTML Sanitization will provide"
            " the best protection",
            "Output encoding and HTML sanitization help address those gaps",
            "all variables** go through validation and are then escaped or sanitized",
        ],
        "en→en",
    ),
    (
        "What does HTML sanitization do?",
        ["HTML Sanitization will strip dangerous HTML from a variable"],
        "en→en",
    ),
    (
        "What data should not be written to logs?",
        [
            "should usually not be recorded directly in the logs",
            "Session identification values (consider replacing with a hashed value",
        ],
        "en→en",
    ),
    (
        "Which algorithm should I use for symmetric encryption?",
        ["**AES** with a key that's at least **128 bits**"],
        "en→en",
    ),
    (
        "Which cipher modes should be used?",
        ["Where available, authenticated modes should always be used"],
        "en→en",
    ),
    (
        "How should uploaded files be validated?",
        [
            "List allowed extensions. Only allow safe and critical extensions",
            "Validate the file type, don't trust the",
            "Set a file size limit",
            "is applied before validating the extensions",
            "as such cannot be trusted, as it is trivial to spoof",
        ],
        "en→en",
    ),
    (
        "What should a password reset say when the account does not exist?",
        ["Return a consistent message for both existent and non-existent accounts"],
        "en→en",
    ),
    (
        "How long should a password reset token stay valid?",
        ["Single use and expire after an appropriate period"],
        "en→en",
    ),
    ("What minimum password length does ASVS require?", ["密码长度至少为 12 个字符"], "en→zh"),
    (
        "According to ASVS, how long may passwords be?",
        ["验证是否允许64个字符以上的密码，并拒绝超过128个字符的密码"],
        "en→zh",
    ),
    ("How long must password salts be under ASVS?", ["验证盐的长度至少为32位"], "en→zh"),
    (
        "What does ASVS say about logging credentials?",
        ["验证应用程序不记录凭证或支付细节", "会话令牌应该只以不可逆的散列形式存储在日志中"],
        "en→zh",
    ),
    (
        "How does ASVS require database queries to be protected against injection?",
        ["是否使用参数化查询、ORM、实体框架"],
        "en→zh",
    ),
    (
        "Which weak cryptographic algorithms does ASVS forbid?",
        ["验证不使用已知不安全的分组模式"],
        "en→zh",
    ),
    (
        "Where does ASVS say files from untrusted sources should be stored?",
        ["是否存储在 Web 根目录之外，并具有有限的权限"],
        "en→zh",
    ),
    (
        "What does ASVS require for the Content Security Policy header?",
        ["内容安全策略（CSP）响应标头是否到位"],
        "en→zh",
    ),
    (
        "What should users see when an unexpected error occurs, according to ASVS?",
        ["是否显示通用信息，可能带有支持人员可以用于调查的唯一ID"],
        "en→zh",
    ),
]

_MARKER = re.compile(r"\s*\[\d+\]")
_ATX = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_NUMBER = re.compile(r"^(?:V?\d+(?:\.\d+)*|第.{1,4}[章节条])\s*")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")
_LINK = re.compile(r"\s*\(\[[^\]]*\]\([^)]*\)\)")
_CUT_END = re.compile(r"[\w、，,和与及或的]$")
_DOUBLED = re.compile(r"[。！？；：，?!;:,][：:，,。]|[?？][.。]")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_PAIRS = ("（）", "()", "[]", "「」", "《》", "【】")


def norm(text: str) -> str:
    """Compare text without case, spaces, punctuation or markup: letters, digits and CJK only."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in text if c.isalnum())


@dataclass
class Question:
    text: str
    spans: list[str]  # reference spans copied from the document that answers it (any one counts)
    pair: str  # the question's language → the answering document's: en→en, zh→zh, en→zh, zh→en


@dataclass
class QuestionSet:
    name: str
    sources: list[Path]
    questions: list[Question]
    headings: set[str]  # normalized headings and table header rows of the corpus


def _markdown_headings(paths: Sequence[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for line, after in zip(lines, [*lines[1:], ""], strict=True):
            if match := _ATX.match(line):
                title = _LINK.sub("", match.group(1))
                found |= {norm(title), norm(_NUMBER.sub("", title))}
            elif line.lstrip().startswith("|") and _SEPARATOR.match(after):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                found.add(norm(" ".join(c for c in cells if c)))
    return {h for h in found if h}


def _pair(question: str) -> str:
    return "zh→zh" if _CJK.search(question) else "en→en"


def sample_set(limit: int | None) -> QuestionSet:
    questions = [Question(q, [span], _pair(q)) for q, span in SAMPLE_QUESTIONS][:limit]
    return QuestionSet("sample", SAMPLES, questions, _markdown_headings(SAMPLES))


def cmrc_set(limit: int | None) -> QuestionSet:
    rows = [json.loads(x) for x in (CMRC / "queries.jsonl").open(encoding="utf-8") if x.strip()]
    questions = [Question(r["question"], list(dict.fromkeys(r["answers"])), "zh→zh") for r in rows][
        :limit
    ]
    # The passages are plain prose without headings.
    return QuestionSet("cmrc", [CMRC / "corpus.jsonl"], questions, set())


def _asvs_chapters(language: str) -> list[Path]:
    """The requirement chapters V1-V14 of the ASVS Markdown in `language` (en or zh-cn)."""
    return sorted(
        p for p in (ASVS / f"{language}-md").glob("0x*-V*.md") if re.match(r"0x\d\d-V\d+-", p.name)
    )


def _asvs_sections(language: str) -> dict[str, tuple[str, list[str]]]:
    """Each requirement section's name and requirement descriptions, by section id (V3.2)."""
    sections: dict[str, tuple[str, list[str]]] = {}
    with (ASVS / f"ASVS_4.0.3-{language}.csv").open(encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            description = _LINK.sub("", row["req_description"]).strip()
            if description and row["section_name"].strip():
                name = row["section_name"].strip()
                sections.setdefault(row["section_id"], (name, []))[1].append(description)
    return sections


def _asvs_set(name: str, ask: str, over: str, limit: int | None) -> QuestionSet:
    """One question per requirement section, written in `ask`'s language from its name, over
    the chapters in `over`'s language; the reference spans are that section's requirement
    descriptions in `over`'s language (paired by section id)."""
    asked, answering = _asvs_sections(ask), _asvs_sections(over)
    template = "{}有哪些要求？" if ask == "zh-cn" else "What are the requirements for {}?"
    pair = f"{ask[:2]}→{over[:2]}"
    questions = [
        Question(template.format(title), answering[sid][1], pair)
        for sid, (title, _) in asked.items()
        if sid in answering
    ][:limit]
    chapters = _asvs_chapters(over)
    return QuestionSet(name, chapters, questions, _markdown_headings(chapters))


def cheatsheets_set(limit: int | None) -> QuestionSet:
    sources = [CHEATSHEETS / f"{n}_Cheat_Sheet.md" for n in CHEATSHEET_NAMES]
    sources += sorted((ASVS / "zh-cn-md").glob("*.md"))
    questions = [Question(q, spans, pair) for q, spans, pair in CHEATSHEET_QUESTIONS][:limit]
    text = norm("".join(p.read_text(encoding="utf-8") for p in sources))
    missing = [s for q in questions for s in q.spans if norm(s) not in text]
    assert not missing, f"reference spans not in the documents: {missing}"
    return QuestionSet("cheatsheets-en", sources, questions, _markdown_headings(sources))


SETS: dict[str, Callable[[int | None], QuestionSet]] = {
    "sample": sample_set,
    "cmrc": cmrc_set,
    "asvs": lambda limit: _asvs_set("asvs", "zh-cn", "zh-cn", limit),
    "cheatsheets-en": cheatsheets_set,
    "asvs-en": lambda limit: _asvs_set("asvs-en", "en", "en", limit),
    "asvs-en2zh": lambda limit: _asvs_set("asvs-en2zh", "en", "zh-cn", limit),
    "asvs-zh2en": lambda limit: _asvs_set("asvs-zh2en", "zh-cn", "en", limit),
}
# The table's groups, by the question's language → the answering document's.
GROUPS = {
    "en→en": "English",
    "zh→zh": "Chinese",
    "en→zh": "cross-lingual",
    "zh→en": "cross-lingual",
}


def _cited_lines(answer: str) -> list[str]:
    """The answer's lines that cite a hit, without the list marker and the [n] markers."""
    return [
        _MARKER.sub("", line).strip().removeprefix("- ").strip()
        for line in answer.splitlines()
        if _MARKER.search(line)
    ]


def _is_heading(line: str, headings: set[str]) -> bool:
    key = norm(line)
    if key in headings:
        return True
    # A heading glued to the sentence after it ("4 会话管理 用户登录后……"): numbered ones only,
    # as a sentence may well begin with a plain heading's words.
    return bool(_NUMBER.match(line)) and any(
        len(h) > 2 and key.startswith(h) and h != norm(_NUMBER.sub("", h)) for h in headings
    )


def _unbalanced(line: str) -> bool:
    if line.count("`") % 2 or line.count("**") % 2:
        return True
    return any(line.count(a) != line.count(b) for a, b in _PAIRS)


def _doubled(answer: str, sources: str) -> bool:
    """Doubled punctuation the answer wrote: a pair the cited passages do not have themselves
    (cmrc's passages keep "（克罗地亚语：，）" where a foreign name was removed)."""
    text = _MARKER.sub("", answer)
    return any(m.group() not in sources for m in _DOUBLED.finditer(text))


def score(qs: QuestionSet, answers: Sequence[Any], hits: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """The set's metrics, and the same per language pair (`by_pair`)."""
    marks = [_marks(qs, q, a, h) for q, a, h in zip(qs.questions, answers, hits, strict=True)]
    out = _aggregate(marks)
    # Misses are kept for the sample only: the other sets' text stays in ../shared/data.
    if qs.name == "sample":
        out["misses"] = [
            {"question": q.text, "answer": a.answer[:300]}
            for q, a, m in zip(qs.questions, answers, marks, strict=True)
            if not m["contains"]
        ][:5]
    elif qs.name == "cheatsheets-en":  # the questions are ours; the answers are not shown
        out["missed"] = [
            q.text for q, m in zip(qs.questions, marks, strict=True) if not m["contains"]
        ]
    pairs = dict.fromkeys(q.pair for q in qs.questions)
    out["by_pair"] = {
        pair: _aggregate([m for q, m in zip(qs.questions, marks, strict=True) if q.pair == pair])
        for pair in pairs
    }
    return out


def _marks(qs: QuestionSet, question: Question, answer: Any, hits: Sequence[Any]) -> dict[str, int]:
    """One answer's counts: contains, found, markup (0 or 1), its cited lines, headings, cuts."""
    cited = _cited_lines(answer.answer) if answer.found else []
    keys = [norm(s) for s in question.spans]
    sources = "\n".join(h.text for h in hits)
    return {
        "contains": any(k and k in norm(line) for line in cited for k in keys),
        "found": bool(answer.found),
        "evidence": any(k and k in norm(h.text) for h in hits for k in keys),
        "markup": any(_unbalanced(x) for x in cited) or _doubled(answer.answer, sources),
        "lines": len(cited),
        "headings": sum(_is_heading(x, qs.headings) for x in cited),
        "cut": sum(bool(_CUT_END.search(x)) and "|" not in x for x in cited),
    }


def _aggregate(marks: Sequence[dict[str, int]]) -> dict[str, Any]:
    n, lines = max(len(marks), 1), sum(m["lines"] for m in marks)

    def share(key: str, of: int) -> float:
        return round(sum(m[key] for m in marks) / max(of, 1), 3)

    return {
        "questions": len(marks),
        "contains": share("contains", n),
        "found": share("found", n),
        "evidence": share("evidence", n),
        "headings": share("headings", lines),
        "cut": share("cut", lines),
        "markup": share("markup", n),
        "lines": lines,
    }


def run_set(qs: QuestionSet, answer: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    """Build the set's knowledge base, search every question, answer offline from the hits:
    once as the recall page does (no aspects), once as `ask` does (the offline plan's aspects)."""
    with (
        tempfile.TemporaryDirectory(prefix="zhixing-answer-") as tmp,
        KnowledgeService(Settings(home=Path(tmp))) as svc,
    ):
        svc.kbs.create("kb", mode="index")
        started = time.perf_counter()
        svc.builds.add("kb", qs.sources)
        build_s = time.perf_counter() - started
        questions = [q.text for q in qs.questions]
        hits = [
            h
            for i in range(0, len(questions), 32)
            for h in svc.search.many(questions[i : i + 32], ["kb"], top_k=TOP_K)
        ]
    out: dict[str, dict[str, Any]] = {}
    for mode in ("search", "agent"):
        started = time.perf_counter()
        answers = [
            answer(q, h, aspects=_aspects(q) if mode == "agent" else ())
            for q, h in zip(questions, hits, strict=True)
        ]
        elapsed_ms = (time.perf_counter() - started) * 1000 / max(len(questions), 1)
        out[mode] = score(qs, answers, hits) | {"answer_ms": round(elapsed_ms, 1)}
        for row in out[mode]["by_pair"].values():
            row["answer_ms"] = out[mode]["answer_ms"]
    out["search"]["build_s"] = round(build_s, 1)
    return out


def _aspects(question: str) -> list[str]:
    """The aspects the offline `plan` node writes (core/ask/nodes.py)."""
    return split_query(question, max_parts=MAX_ASPECTS) or [question]


def load_answer(before: Path | None) -> Callable[..., Any]:
    """`grounded_answer` of core/answer.py, or of the module copied to `before`."""
    if before is None:
        from zhixing.core.answer import grounded_answer

        return grounded_answer
    spec = importlib.util.spec_from_file_location("answer_before", before)
    assert spec is not None and spec.loader is not None, f"cannot load {before}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module.grounded_answer  # type: ignore[no-any-return]


COLUMNS = ("questions", "contains", "found", "evidence", "headings", "cut", "markup", "answer_ms")


def _rows(
    results: dict[str, dict[str, dict[str, dict[str, Any]]]],
) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(group, set and pair, mode, label, row) for every pair of every set, mode and run; a run
    stored before the pairs were recorded counts as Chinese (its sets were then all Chinese)."""
    rows = []
    for label, sets in results.items():
        for name, modes in sets.items():
            for mode, row in modes.items():
                for pair, sub in (row.get("by_pair") or {"zh→zh": row}).items():
                    rows.append((GROUPS.get(pair, pair), f"{name} {pair}", mode, label, sub))
    return rows


def _summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several rows as one: shares weighted by questions (headings and cut by cited lines)."""
    n = sum(r["questions"] for r in rows)
    lines = sum(r.get("lines", 0) for r in rows)

    def mean(key: str, weight: str, digits: int = 3) -> float | str:
        if any(key not in r for r in rows):  # a run stored before the column was
            return ""
        total = sum(r.get(weight, 0) for r in rows)
        return round(sum(r[key] * r.get(weight, 0) for r in rows) / max(total, 1), digits)

    return {
        "questions": n,
        "lines": lines,
        **{c: mean(c, "questions") for c in ("contains", "found", "evidence", "markup")},
        "answer_ms": mean("answer_ms", "questions", 1),
        **{c: mean(c, "lines") for c in ("headings", "cut")},
    }


def print_table(results: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> None:
    """Rows grouped by language (English, Chinese, cross-lingual), each group closed by its
    summary per answer mode and run; a run's rows side by side."""
    rows = _rows(results)
    print(f"{'run':<8} {'set':<22} {'as':<7}" + " ".join(f"{c:>9}" for c in COLUMNS))
    for group in dict.fromkeys([*dict.fromkeys(GROUPS.values()), *(r[0] for r in rows)]):
        mine = sorted((r for r in rows if r[0] == group), key=lambda r: (r[1], r[2]))
        if not mine:
            continue
        print(f"-- {group}")
        for _, name, mode, label, row in mine:
            cells = " ".join(f"{row.get(c, ''):>9}" for c in COLUMNS)
            print(f"{label:<8} {name:<22} {mode:<7}{cells}")
        for mode in dict.fromkeys(r[2] for r in mine):
            for label in dict.fromkeys(r[3] for r in mine):
                picked = [r[4] for r in mine if r[2] == mode and r[3] == label]
                if picked:
                    cells = " ".join(f"{_summary(picked).get(c, ''):>9}" for c in COLUMNS)
                    print(f"{label:<8} {'= all ' + group:<22} {mode:<7}{cells}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sets", default=",".join(SETS), help="comma-separated: " + ", ".join(SETS)
    )
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each set")
    parser.add_argument("--before", type=Path, help="a copy of an older core/answer.py")
    parser.add_argument("--label", help="the run's name in answer.json (default before/after)")
    parser.add_argument("--out", type=Path, default=RESULTS / "answer.json")
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        parser.error(f"unknown set {', '.join(unknown)}; choose from {', '.join(SETS)}")
    label = args.label or ("before" if args.before else "after")
    answer = load_answer(args.before)
    results: dict[str, Any] = {}
    for name in names:
        results[name] = run_set(SETS[name](args.limit), answer)
        for mode, row in results[name].items():
            print(f"{label} {name} {mode}: {json.dumps({c: row[c] for c in COLUMNS})}", flush=True)
    stored: dict[str, Any] = {}
    if args.out.exists():
        stored = json.loads(args.out.read_text(encoding="utf-8"))
    stored.setdefault(label, {}).update(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stored, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print_table({k: v for k, v in stored.items() if isinstance(v, dict)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
