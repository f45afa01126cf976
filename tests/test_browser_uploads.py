"""Upload names are the client's to choose, never the server's paths: traversal and absolute
names posted through Streamlit's real upload endpoint (`/_stcore/upload_file/…`) by Chromium.

The browser picks a harmless name; Playwright rewrites the multipart `filename` on the wire to
the hostile one before the server reads it, as a hand-made client would send it. The workspace
archive of a task and a document of a build must both land inside the home under a name the
server made, and the staged files must be gone when the run ends.
"""

from __future__ import annotations

import io
import re
import sqlite3
import zipfile
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium, serve_app, settle
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

pytestmark = [pytest.mark.slow, pytest.mark.browser]
TIMEOUT_MS = 120_000


def _archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "src/Login.java",
            "class Login {\n"
            "    java.sql.ResultSet find(java.sql.Statement st, String name) throws Exception {\n"
            '        return st.executeQuery("SELECT * FROM u WHERE n=\'" + name + "\'");\n'
            "    }\n"
            "}\n",
        )
    return buffer.getvalue()


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):  # noqa: ANN001
    require_chromium()
    root = tmp_path_factory.mktemp("uploads")
    home = root / "home"
    doc = root / "rules.md"
    doc.write_text("# SQL\n\nQueries are built with bound parameters, never by concatenation.\n")
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("rules")
        svc.builds.add("rules", [doc])
    with serve_app(home) as url:
        yield url, home, root


@pytest.fixture(scope="module")
def browser(served):  # noqa: ANN001
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):  # noqa: ANN001
    # A fresh context per test (its own session); the UI follows the browser's language, and
    # these tests read its Chinese labels.
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def _rename_uploads(page, sent: str, hostile: str) -> list[str]:  # noqa: ANN001
    """Rewrite the multipart file name of every upload from `sent` to `hostile`."""
    seen: list[str] = []

    def rewrite(route, request) -> None:  # noqa: ANN001
        body = request.post_data_buffer or b""
        old = f'filename="{sent}"'.encode()
        if old in body:
            seen.append(hostile)
            body = body.replace(old, f'filename="{hostile}"'.encode())
        route.continue_(post_data=body)

    page.route(re.compile(r".*/_stcore/upload_file/.*"), rewrite)
    return seen


def _everything_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest.mark.parametrize("hostile", ["../../../../{root}/escaped.zip", "{root}/absolute.zip"])
def test_a_workspace_upload_with_a_hostile_name_stays_in_the_home_and_is_removed(
    page,
    served,
    hostile,  # noqa: ANN001
) -> None:
    url, home, root = served
    hostile = hostile.format(root=root.as_posix().lstrip("/") if hostile[0] == "." else root)
    seen = _rename_uploads(page, "project.zip", hostile)
    page.goto(f"{url}/agent")
    settle(page)
    page.locator(".st-key-agent-archive input[type=file]").set_input_files(
        {"name": "project.zip", "mimeType": "application/zip", "buffer": _archive()}
    )
    settle(page)
    reports = page.get_by_role("heading", name=re.compile(r"^报告"))  # not the report's own title
    before = reports.count()  # the conversation so far may hold an earlier task's report
    box = page.locator(".st-key-agent-input textarea")
    box.fill("@rules Audit this project for SQL injection")
    box.press("Enter")
    reports.nth(before).wait_for(timeout=TIMEOUT_MS)
    settle(page)
    assert seen == [hostile]  # the hostile name did reach the server
    assert "Login.java" in page.content()  # the archive was unpacked and read
    assert not (root / "escaped.zip").exists() and not (root / "absolute.zip").exists()
    for _ in range(100):  # the page shows the report a moment before the run's cleanup ends
        left = _everything_under(home / "uploads") + _everything_under(home / "runs")
        if not left:
            break
        page.wait_for_timeout(100)
    assert left == []
    with sqlite3.connect(home / "catalog.db") as db:
        assert db.execute("SELECT COUNT(*) FROM runs WHERE kind = 'task'").fetchone()[0] >= 1


def test_a_document_upload_with_a_traversal_name_is_built_under_a_clean_name(
    page,
    served,  # noqa: ANN001
) -> None:
    url, home, root = served
    hostile = "../../../../" + root.as_posix().lstrip("/") + "/planted.md"
    seen = _rename_uploads(page, "notes.md", hostile)
    page.goto(url)
    settle(page)
    page.locator(".st-key-create-name-0 input").fill("notes")
    page.locator(".st-key-create-files-0 input[type=file]").set_input_files(
        {
            "name": "notes.md",
            "mimeType": "text/markdown",
            "buffer": b"# Notes\n\nTLS 1.2 or later.\n",
        }
    )
    # The upload has reached the server once the uploader lists it; the create button before
    # that builds nothing (under load the click came first and the page never said 新增).
    page.get_by_text("notes.md").first.wait_for()
    settle(page)
    page.locator(".st-key-create-submit button").click()
    page.get_by_text(re.compile(r"新增 1 篇")).first.wait_for(timeout=TIMEOUT_MS)
    assert seen == [hostile]
    assert not (root / "planted.md").exists()
    with sqlite3.connect(home / "catalog.db") as db:
        sources = [r[0] for r in db.execute("SELECT source FROM documents")]
    assert "planted.md" in sources  # named by its base name only
    assert _everything_under(home / "uploads") == []
