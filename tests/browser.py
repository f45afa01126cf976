"""Real-browser harness: the app served by `streamlit run` on a free port, driven by Playwright
with Debian's Chromium (docs/architecture.md §11). Imported by tests/test_browser.py."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
TIMEOUT_MS = 120_000


def require_chromium() -> None:
    """Skip without Chromium on a workstation; in CI its absence is a failure, not a skip."""
    if Path(CHROMIUM).exists():
        return
    message = f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_app(home: Path, env: Mapping[str, str] = (), timeout_s: float = 90) -> Iterator[str]:
    """Run the app on a free port with its own Zhixing home; yield its URL."""
    port = free_port()
    streamlit = shutil.which("streamlit", path=str(Path(sys.executable).parent)) or "streamlit"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ZHIXING_"))}
    environ.update({"ZHIXING_HOME": str(home), **dict(env)})
    log = (home.parent / "streamlit.log").open("w")
    process = subprocess.Popen(
        [
            streamlit,
            "run",
            str(ROOT / "app" / "main.py"),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],  # fmt: skip
        cwd=ROOT,
        env=environ,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                    if reply.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the app did not start: {(home.parent / 'streamlit.log')}")
            time.sleep(0.3)
        yield url
    finally:
        stop(process, timeout_s=15)
        log.close()


def stop(process: subprocess.Popen, timeout_s: float = 10) -> None:
    """Ask a server process to end; kill it if it has not within `timeout_s`."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium under Playwright, closed on the way out (`require_chromium` first)."""
    from playwright.sync_api import sync_playwright

    require_chromium()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, url: str) -> Any:  # noqa: ANN001
    """A page of a new zh-CN context, 1400x1000, at `url` once the app has drawn it."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    settle(page)
    return page


def settle(page, timeout_ms: float = 120_000) -> None:  # noqa: ANN001
    """Wait until Streamlit has finished running the script for what was just done.

    The app root says where its run stands (`data-test-script-state`): a widget's rerun request
    shows there at once, before the server answers, so waiting for `notRunning` (after a
    moment for the event to reach it) does not pass while the page is still drawn from the
    last run.
    """
    page.wait_for_timeout(300)
    page.wait_for_function(
        """() => { const app = document.querySelector('[data-testid="stApp"]');
                   return app && app.getAttribute('data-test-script-state') === 'notRunning'
                     && !document.querySelector('[data-testid="stStatusWidget"]'); }""",
        timeout=timeout_ms,
    )


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about", "chrome-error"):
        return True
    return parsed.hostname in LOCAL_HOSTS


def create_from_uploads(page, url: str, name: str, files: list[str]) -> None:  # noqa: ANN001
    """Create a knowledge base ("仅构建知识索引") from uploads with the build page's quick-create
    form; return once its build runs (its 取消 shows)."""
    page.goto(url)
    page.get_by_test_id("stSidebar").wait_for()
    settle(page)
    page.locator(".st-key-create-name-0 input").fill(name)
    page.locator(".st-key-create-files-0 input[type=file]").set_input_files(files)
    page.get_by_text(Path(files[0]).name).first.wait_for()
    page.get_by_text("仅构建知识索引").first.click()
    settle(page)
    page.locator(".st-key-create-submit button").click()
    page.get_by_role("button", name="取消", exact=True).wait_for()
