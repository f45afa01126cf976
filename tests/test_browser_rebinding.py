"""DNS rebinding in Chromium (issue 33): `make run`'s app, on localhost with no logins, loaded as
`http://attacker.test:PORT/` (Chromium's `--host-resolver-rules` plays the rebinding DNS
server, mapping the name onto 127.0.0.1) shows one sentence and nothing of the knowledge;
`http://localhost:PORT/` still gets the app, where links planted in a document render as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium, serve_app, settle
from tests.test_inert_text import DOCUMENT, PLANTED_NAME
from zhixing.app.strings.shell import ZH

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TIMEOUT_MS = 120_000
ATTACKER = "attacker.test"
SECRET = "secret-plans"  # the knowledge base a foreign page must not learn of


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, embedder) -> Iterator[str]:
    """The app as `make run` serves it (127.0.0.1, no logins), with one knowledge base."""
    from zhixing.core.config import Settings
    from zhixing.core.service import KnowledgeService

    require_chromium()
    root = tmp_path_factory.mktemp("rebinding")
    home, source = root / "home", root / "docs" / PLANTED_NAME
    source.parent.mkdir()
    source.write_text(DOCUMENT, encoding="utf-8")
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create(SECRET)
        assert svc.builds.add(SECRET, [source]).added == [PLANTED_NAME]
    with serve_app(home) as url:
        yield url


@pytest.fixture(scope="module")
def page(app_url: str):
    from playwright.sync_api import sync_playwright

    rules = f"--host-resolver-rules=MAP {ATTACKER} 127.0.0.1"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules])
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        yield page
        browser.close()


def _at(app_url: str, host: str, path: str = "") -> str:
    return f"http://{host}:{urlparse(app_url).port}/{path}"


@pytest.mark.parametrize("path", ["", "settings", "recall"])
def test_a_page_rebound_onto_localhost_gets_one_sentence_and_localhost_still_the_app(
    page, app_url: str, path: str
) -> None:
    page.goto(_at(app_url, ATTACKER, path))
    settle(page)
    page.locator("[data-testid=stAlert], [data-testid=stSidebar]").first.wait_for()
    text = page.locator("body").inner_text()
    assert "zhixing serve --host 0.0.0.0" in text and "localhost、127.0.0.1" in text
    assert ZH.LOCAL_ONLY.split("：")[0] in text
    html = page.content()
    assert SECRET not in html and PLANTED_NAME not in html
    assert page.get_by_test_id("stSidebar").count() == 0  # no list of knowledge bases
    assert "设置" not in text and "大模型" not in text  # no Settings, no LLM endpoint

    page.goto(_at(app_url, "localhost", path))  # the same server, by its own name
    page.get_by_test_id("stSidebar").wait_for()
    settle(page)
    assert SECRET in page.get_by_test_id("stSidebar").inner_text()
    if path == "settings":
        page.get_by_role("heading", name="设置").first.wait_for()


def test_links_planted_in_a_document_render_as_text_in_the_answer(page, app_url: str) -> None:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    page.goto(_at(app_url, "localhost", "recall"))
    settle(page)
    box = page.locator(".st-key-recall-query input")
    box.fill("会话令牌空闲多久后失效？")
    box.press("Enter")
    settle(page)
    main = page.get_by_test_id("stMain")
    main.get_by_text("重新登录", exact=False).first.wait_for()
    for expander in page.get_by_test_id("stExpander").all():  # the citations and the hits
        expander.locator("summary").click()
    settle(page)
    text = main.inner_text()
    assert "重新登录" in text and "evil.test/signin" in text.replace("\u2060", "")
    assert PLANTED_NAME in text.replace("\u2060", "")
    links = main.locator("a[href], img[src]").evaluate_all(
        "els => els.map(e => e.getAttribute('href') || e.getAttribute('src'))"
    )
    assert not [u for u in links if "evil" in u or u.startswith(("mailto:", "http"))], links
    assert not [u for u in seen if "evil.test" in u]  # the beacon image was never fetched
