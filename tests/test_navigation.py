"""Pages that are not content stay out of answers (issue 37): a table of contents, an index or
bare page furniture is told from content (core/text/navigation.py), ranks after content in
search and never gives an offline answer line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import built_home
from zhixing.core.answer import grounded_answer
from zhixing.core.config import Settings
from zhixing.core.search.engine import content_first
from zhixing.core.service import KnowledgeService
from zhixing.core.text.navigation import is_navigation

ENGLISH_CONTENTS = """## Table of Contents

Frontispiece.......................................................7
V2 Authentication ................................................14
V3 Session Management .......................................32
Control Objective ................................................32
V3.2 Session Binding ..............................................33
V4 Access Control ..................................................36
"""

CHINESE_CONTENTS = """目录

第一章 总则……………………………………１
第二章 身份鉴别…………………………………５
第三章 会话管理。。。。。。。。。。。。。１２
第四章 访问控制…………………………………１８
附录A 术语……………………………………… ２５
"""

NUMBERED_CONTENTS = """Contents
Chapter 1 Introduction 1
Chapter 2 Authentication 9
Chapter 3 Session Management 32
Chapter 4 Access Control 41
"""

ENGLISH_INDEX = """Index
access control, 36, 41-44
session tokens, 32, 35
cookies, 33
logging, 52, 58
"""

CHINESE_INDEX = """索引
会话令牌，32，35
访问控制，36，41
日志，52
"""

PAGE_FURNITURE = "12\n\n- 13 -\n\nPage 14 of 40\n\n第 15 页\n"

# Contents without dot leaders or section numbers: plain titles and their pages, titles alone
# under the contents title, and leaders whose page number the parser lost.
PLAIN_CONTENTS = """Contents
Frontispiece 7
About the Standard 7
Copyright and License 7
Preface 8
Using the ASVS 11
"""

TITLES_ALONE = """目录
前言
总则
身份鉴别
会话管理
访问控制
"""

LOST_PAGES = """Frontispiece...............................................................
About the Standard........................................................
Copyright and License....................................................
Project Leads................................................................
"""

# Lines that end in rising numbers, as plain contents lines do, but no contents title or
# contents line anchors them: a list of settings.
SETTINGS = """Limits
Max retries 3
Timeout 30
Port 443
Session length 900
"""

# A section named "Contents" that says something: its titles-alone run ends at the sentence.
CONTENTS_SECTION = """## Contents

The package holds three parts.
Cable
Charger
Session tokens expire after 15 minutes and must be renewed on every login.
"""

PROSE = """## V3 Session Management

Session tokens must be generated with at least 64 bits of entropy. The application
must generate a new session token on user authentication, and tokens must be
invalidated when the user logs out. Idle sessions expire after 15 minutes; see
section 3.3 on page 32.
"""

CHINESE_PROSE = """## 会话管理

应用在用户认证后必须生成新的会话令牌，令牌至少有 64 位熵。
空闲会话在 15 分钟后失效，绝对有效期不超过 8 小时。
详见第 3.3 节，第 32 页。
"""

MARKDOWN_TABLE = """| # | Description | L1 | L2 |
| --- | --- | --- | --- |
| 3.2.1 | Verify the application generates a new session token on authentication. | ✓ | ✓ |
| 3.2.2 | Verify that session tokens possess at least 64 bits of entropy. | ✓ | ✓ |
| 3.3.1 | Verify that logout invalidates the session token. | ✓ | ✓ |
"""

# A plain-text table whose rows, like a table of contents, start with a number and end in one:
# its last column does not run in page order.
PLAIN_TABLE = """Rank Country Medals
1 Norway 37
2 Germany 27
3 Canada 26
4 United States 25
5 Sweden 18
"""


@pytest.mark.parametrize(
    "text",
    [
        ENGLISH_CONTENTS,
        CHINESE_CONTENTS,
        NUMBERED_CONTENTS,
        ENGLISH_INDEX,
        CHINESE_INDEX,
        PAGE_FURNITURE,
        PLAIN_CONTENTS,
        TITLES_ALONE,
        LOST_PAGES,
    ],
    ids=[
        "en-contents",
        "zh-contents",
        "numbered-contents",
        "en-index",
        "zh-index",
        "pages",
        "plain-titles",
        "titles-alone",
        "lost-pages",
    ],
)
def test_contents_indexes_and_page_furniture_are_navigation(text: str) -> None:
    assert is_navigation(text)


@pytest.mark.parametrize(
    "text",
    [
        PROSE,
        CHINESE_PROSE,
        MARKDOWN_TABLE,
        PLAIN_TABLE,
        SETTINGS,
        CONTENTS_SECTION,
        "See page 12.",
        "",
    ],
    ids=[
        "en-prose",
        "zh-prose",
        "markdown-table",
        "plain-table",
        "settings",
        "contents-section",
        "one-line",
        "empty",
    ],
)
def test_prose_and_tables_are_content(text: str) -> None:
    assert not is_navigation(text)


def test_a_chunk_where_contents_end_and_text_begins_is_what_most_of_it_is() -> None:
    assert is_navigation(ENGLISH_CONTENTS + "\n" + PROSE.splitlines()[2])
    assert not is_navigation(PROSE + "\n" + "V4 Access Control ....... 36\n")


# --- in search and in the offline answer ------------------------------------------------------

QUESTION = "What does the standard require for session tokens?"
# The contents name the question's words ("Session", "Management", "tokens") more densely than
# the chapter that answers: without the demotion BM25 ranks them first.
CONTENTS_DOC = """# Contents

Session tokens: what the standard requires ................... 32
Session tokens: requirements of the standard ................. 33
Session tokens: binding, as the standard requires ............ 34
Session tokens: logout, as the standard requires ............. 35
Session tokens: cookies, as the standard requires ............ 36
"""
CONTENT_DOC = """# V3 Session Management

The standard requires that session tokens possess at least 64 bits of entropy.
Applications often keep users signed in across many pages, and the server remembers who they
are between requests. Developers should review how long users stay signed in, how browsers
store what the server hands them, and what happens when a user leaves a shared computer.
"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[KnowledgeService]:
    where = tmp_path_factory.mktemp("navigation")
    home = built_home(
        where, embedder, "kb", {"contents.md": CONTENTS_DOC, "sessions.md": CONTENT_DOC}
    )
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        yield svc


def test_the_contents_rank_after_the_chapter_and_give_no_answer_line(service) -> None:
    hits = service.search.query(QUESTION, ["kb"], top_k=10)
    documents = [h.document for h in hits]
    assert documents[0] == "sessions.md"
    assert "contents.md" in documents  # still findable, after the content
    assert documents.index("contents.md") > documents.index("sessions.md")
    answer = grounded_answer(QUESTION, hits)
    assert answer.found
    assert {c.document for c in answer.citations} == {"sessions.md"}
    assert "64 bits of entropy" in answer.answer
    assert "....." not in answer.answer and "Session Binding" not in answer.answer


def test_content_first_keeps_each_parts_order(service) -> None:
    hits = service.search.query(QUESTION, ["kb"], top_k=10)
    contents = [h for h in hits if is_navigation(h.text)]
    reordered = content_first([*contents, *reversed([h for h in hits if h not in contents])])
    assert reordered[-len(contents) :] == contents
    assert not any(is_navigation(h.text) for h in reordered[: -len(contents)])


def test_without_the_demotion_the_contents_would_lead(service) -> None:
    """The fixture is one where the demotion matters: the fused order put the contents first."""
    hits = service.search.query(QUESTION, ["kb"], top_k=10)
    contents = next(h for h in hits if h.document == "contents.md")
    chapter = next(h for h in hits if h.document == "sessions.md")
    assert contents.score > chapter.score


# --- running headers and footers of a PDF -----------------------------------------------------

BASELINE_PAGES = [
    "Session tokens are renewed at every login and expire after 15 minutes of inactivity.",
    "Session tokens never appear in URLs; cookies carry them with the Secure attribute.",
    "Passwords are hashed with Argon2id; the hash parameters are reviewed each year.",
    "Audit logs keep every login and logout of a session for 180 days.",
]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[KnowledgeService]:
    from tests.test_ingest_pdf import make_pdf, text

    pages = [
        text(72, 750, "Acme Session Security Baseline 4.0", 9)
        + text(72, 700, body)
        + text(300, 40, f"Acme Session Security Baseline 4.0 - page {n}", 9)
        for n, body in enumerate(BASELINE_PAGES, start=1)
    ]
    where = tmp_path_factory.mktemp("baseline")
    (where / "docs").mkdir()
    (where / "docs" / "baseline.pdf").write_bytes(make_pdf(pages))
    home = where / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb")
        svc.builds.add("kb", [where / "docs" / "baseline.pdf"])
        yield svc


def test_a_running_header_never_becomes_an_answer_line(baseline) -> None:
    question = "When do session tokens expire?"
    hits = baseline.search.query(question, ["kb"], top_k=10)
    answer = grounded_answer(question, hits)
    assert answer.found and "expire after 15 minutes" in answer.answer
    assert "Baseline 4.0" not in answer.answer and "page" not in answer.answer
    assert not any("Baseline 4.0" in h.text for h in hits)
