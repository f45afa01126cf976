"""The page-test helper: the app driven by Streamlit's AppTest, the way a user walks it.

Every page test opens the app through `open_page` (which fails the test on any exception the
script raised), moves with `go`, acts through `run`, `say` and `sign_in`, and reads with
`everything`.
"""

from __future__ import annotations

import functools
from pathlib import Path

from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import AppTest

__all__ = ["MAIN", "everything", "go", "open_page", "run", "say", "sign_in"]

ROOT = Path(__file__).resolve().parents[1]
MAIN = str(ROOT / "app" / "main.py")

# Each new AppTest reads the metadata of every installed distribution, looking for Streamlit
# components (0.05 s an app, 8 s of the unit tests); what is installed does not change while
# the tests run, so the first scan stands for the rest. AppTest imports the scanner on each run.
manifest_scanner.scan_component_manifests = functools.cache(
    manifest_scanner.scan_component_manifests
)


def run(at: AppTest) -> AppTest:
    """Run the script once more (after an input) and fail on any exception it raised."""
    at.run()
    assert not at.exception, at.exception
    return at


def open_page(page: str | None = None, *, timeout: float = 120) -> AppTest:
    """The app as a fresh session opens it, then the page `page` (pages/<page>.py) if given."""
    at = run(AppTest.from_file(MAIN, default_timeout=timeout))
    return at if page is None else go(at, page)


def go(at: AppTest, page: str) -> AppTest:
    """Switch to pages/<page>.py (ValueError when the navigation does not offer it)."""
    at.switch_page(f"../pages/{page}.py")  # relative to app/main.py
    return run(at)


def sign_in(at: AppTest, name: str, password: str) -> AppTest:
    """Fill in the login form and submit it."""
    at.text_input(key="login-name").input(name)
    at.text_input(key="login-password").input(password)
    at.button[0].click()
    return run(at)


def say(at: AppTest, message: str, key: str = "agent-input") -> AppTest:
    """Send a chat message (the agent page's input by default)."""
    at.chat_input(key=key).set_value(message)
    return run(at)


def everything(at: AppTest) -> str:
    """All the page shows, main area and sidebar, as one string to search."""
    return str(list(at.main)) + str(list(at.sidebar))


def ask_recall(at: AppTest, question: str, mode: str = "answer") -> AppTest:
    """Type a question into the recall notebook's new cell, pick its mode and send the form."""
    at.text_input(key="recall-query").input(question)
    at.radio(key="recall-mode").set_value(mode)
    at.button(key="recall-run").click()
    return run(at)


def recall_cells(at: AppTest) -> list[str]:
    """The questions of the recall notebook's cells, in order, as the page shows them."""
    return [
        m.value.split("** ", 1)[1]
        for m in at.markdown
        if m.value.startswith("**") and ".** " in m.value
    ]
