"""Document and model text stays data on the page (issue 33): link syntax and autolinks
planted in a document render as the text they are, in the answer, its citations and the hits.

`inert` (app/widgets.py) is the one helper every page passes such text through; the rendered
check in Chromium is tests/test_browser_rebinding.py's.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages import open_page, run
from zhixing.app.rounds import highlighted
from zhixing.app.widgets import inert
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

# What Markdown (CommonMark + GFM, as Streamlit renders it) would turn into a link or an image:
# `](` and `][` after a label, a `[label]:` definition, `<scheme:…>` and `<a@b>` autolinks, and
# the GFM autolink literals (http://, https://, www., a@b.c), also behind an escape or an entity
# that a renderer decodes before it looks for them.
LINK_SYNTAX = re.compile(
    r"\][(\[]|^ {0,3}\[[^\]]*\]:|<[a-z][a-z0-9+.-]*:|<[\w.!#$%&'*+/=?^`{|}~-]+@",
    re.IGNORECASE | re.MULTILINE,
)
AUTOLINK = re.compile(
    r"(?:https?|www)(?:\\?[:.]|&#?\w+;)|[-.+\w](?:\\?@|&#?\w+;)[-\w]", re.IGNORECASE
)

PLANTED = [
    "[sign in again](https://evil.test/login)",
    '[sign in](https://evil.test "title")',
    "[here][r]\n\n[r]: https://evil.test",
    "[here][]\n\n[here]: https://evil.test",
    "[here]\n\n[here]:https://evil.test",
    "![beacon](https://evil.test/b.png)",
    "![beacon][i]\n\n[i]: https://evil.test/b.png",
    "[x](<https://evil.test>)",
    "[[x]](https://evil.test)",
    "\\[x\\](https://evil.test)",
    "<https://evil.test>",
    "<mailto:help@evil.test>",
    "<help@evil.test>",
    "<ftp://evil.test/x>",
    "bare https://evil.test/login?next=1 here",
    "HTTPS://EVIL.TEST and hTtP://evil.test",
    "www.evil.test and WWW.EVIL.TEST",
    "mail help@evil.test or mailto:help@evil.test or xmpp:help@evil.test",
    "https&#58;//evil.test and &#104;ttps://evil.test and www&period;evil.test",
    "https\\://evil\\.test",
    "请访问https://evil.test登录",
    "`[code](https://evil.test)`",
    "<a href='https://evil.test'>sign in</a>",
]


def _links(markdown: str) -> list[str]:
    return LINK_SYNTAX.findall(markdown) + AUTOLINK.findall(markdown)


@pytest.mark.parametrize("text", PLANTED)
def test_inert_leaves_no_link_syntax_and_no_autolinkable_url(text: str) -> None:
    assert _links(text), "the check itself must see the planted link"
    shown = inert(text)
    assert not _links(shown), shown
    assert inert(shown) == shown  # twice is once
    assert shown.replace("\u2060", "") == text  # it reads as it was written


def test_inert_breaks_only_links_and_keeps_the_products_own_markdown():
    own = "**1.** 会话在 15 分钟后失效 [1]。\n- *密码* 用 `bcrypt`\n### 标题\n"
    shown = inert(own + "[重新登录](https://evil.test)")
    assert shown.startswith(own) and not _links(shown)


def test_a_cited_chunk_shown_literally_has_no_autolink_either():
    chunk = "Sign in again at https://evil.test/login or www.evil.test; [here](https://evil.test)."
    shown = highlighted(chunk, "Sign in again at https://evil.test/login or www.evil.test;")
    assert ":orange-background[" in shown and not _links(shown), shown


DOCUMENT = (
    "# 会话管理\n\n"
    "会话令牌在空闲 15 分钟后失效，失效后请[重新登录](https://evil.test/login)，"
    "或打开 https://evil.test/signin 、<https://evil.test/x>、www.evil.test，"
    "或写信给 help@evil.test。\n\n"
    "![beacon](https://evil.test/beacon.png)\n"
)
PLANTED_NAME = "sign-in-www.evil.test.md"  # a hit's label names its document


@pytest.fixture
def planted_home(app_home, embedder, tmp_path):
    source = tmp_path / "docs" / PLANTED_NAME
    source.parent.mkdir()
    source.write_text(DOCUMENT, encoding="utf-8")
    with KnowledgeService(Settings(home=app_home), embedder=embedder) as svc:
        svc.kbs.create("kb")
        assert svc.builds.add("kb", [source]).added == [PLANTED_NAME]
    return app_home


def _rendered(at: AppTest) -> list[str]:
    """Every string the page handed to Streamlit as Markdown: text, captions, notices, and the
    labels of expanders and status blocks."""
    shown = [m.value for m in (*at.markdown, *at.caption, *at.info, *at.warning, *at.error)]
    return shown + [e.label for e in at.expander] + [s.label for s in at.status]


def test_an_answer_with_planted_links_renders_them_as_text_on_the_recall_page(planted_home):
    at = open_page("recall")
    at.text_input(key="recall-query").input("会话令牌空闲多久后失效？")
    at.radio(key="recall-mode").set_value("answer")
    at.button(key="recall-run").click()
    at = run(at)
    shown = _rendered(at)
    everything = "\n".join(shown)
    # The planted text is on the page (the answer quotes it, the citation and hit show it) …
    assert "重新登录" in everything and "evil.test/signin" in everything
    assert any(PLANTED_NAME in label.replace("\u2060", "") for label in shown)
    # … and not one piece of it is a link.
    assert not [s for s in shown if _links(s)], [s for s in shown if _links(s)]
