"""A localhost app answers only to localhost (issue 33): without logins, a browser that reached
the app under any other Host (a page moved onto 127.0.0.1 by DNS rebinding) or from another
Origin gets one sentence and no knowledge. The rendered check in Chromium is
tests/test_browser_rebinding.py's.

AppTest has no browser and so no request headers; here Streamlit's seam that hands a run its
request (`streamlit.runtime.context._get_client_context`) is given a request with headers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from tests.pages import everything, go, open_page, run
from zhixing.app.auth import is_loopback_host
from zhixing.app.strings.settings import ZH as SETTINGS
from zhixing.app.strings.shell import ZH
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

LOOPBACK = [
    "localhost",
    "localhost:8501",
    "LocalHost:8501",
    "app.localhost:8501",
    "127.0.0.1",
    "127.0.0.1:8501",
    "127.8.9.10:80",
    "[::1]",
    "[::1]:8501",
    " localhost:8501 ",
]
FOREIGN = [
    "attacker.test:8501",
    "attacker.test",
    "",
    " ",
    "localhost.",
    "localhost.attacker.test:8501",
    "localhostattacker.test",
    "127.0.0.1.nip.io:8501",
    "0.0.0.0:8501",
    "10.0.0.2:8501",
    "192.168.1.5",
    "[::ffff:127.0.0.1]:8501",
    "[::2]:8501",
    "::1",
    "[::1",
    "localhost:8501:8501",
    "localhost:http",
    "localhost:123456",
    "127.0.0.1@attacker.test",
    "attacker.test#localhost",
    "attacker.test/localhost",
    "localhost\x00.attacker.test",
    "ｌｏｃａｌｈｏｓｔ",
]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_are_recognised_with_or_without_a_port(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", FOREIGN)
def test_any_other_host_is_refused(host: str) -> None:
    assert not is_loopback_host(host)


@dataclass
class Request:
    """What Streamlit keeps of a browser's websocket request (`ClientContext`)."""

    headers: Sequence[tuple[str, str]]
    cookies: dict[str, str] = field(default_factory=dict)
    remote_ip: str | None = "127.0.0.1"


@pytest.fixture
def request_with(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Set the headers of the request every following AppTest run comes with."""
    import streamlit.runtime.context as context

    def set_headers(*headers: tuple[str, str]) -> None:
        monkeypatch.setattr(context, "_get_client_context", lambda: Request(headers))

    yield set_headers


SECRET = "secret-plans"


@pytest.fixture
def home(app_home, embedder):
    """A home with a knowledge base whose name must not reach a foreign page."""
    with KnowledgeService(Settings(home=app_home), embedder=embedder) as svc:
        svc.kbs.create(SECRET)
    return app_home


def _refused(at) -> bool:  # noqa: ANN001
    """The page shows the one sentence, and nothing else."""
    return [w.value for w in at.warning] == [ZH.LOCAL_ONLY] and len(at.main) == 1


@pytest.mark.parametrize(
    "headers",
    [
        [("Host", "attacker.test:8501"), ("Origin", "http://attacker.test:8501")],  # rebinding
        [("Host", "attacker.test:8501")],  # no Origin: not a browser, or an old one
        [("Host", ""), ("Origin", "http://localhost:8501")],  # an empty Host
        [("Origin", "http://localhost:8501"), ("Upgrade", "websocket")],  # no Host at all
        [("Host", "localhost:8501"), ("Origin", "http://attacker.test:8501")],  # another site
        [("Host", "localhost:8501"), ("Origin", "null")],  # a sandboxed frame or a file
        [("Host", "localhost:8501"), ("Host", "attacker.test:8501")],  # two Hosts
    ],
    ids=["rebinding", "no-origin", "empty-host", "no-host", "foreign-origin", "null-origin", "two"],
)
def test_a_foreign_host_or_origin_gets_one_sentence_and_no_knowledge(
    home, request_with, headers
) -> None:
    request_with(*headers)
    at = open_page()
    assert SECRET not in everything(at) and not at.sidebar and not at.button
    assert _refused(at)
    at = go(at, "settings")  # asked for by its address: the same sentence, nothing of it
    assert not at.text_input and SECRET not in everything(at) and _refused(at)


@pytest.mark.parametrize("host", ["localhost:8501", "127.0.0.1:8501", "[::1]:8501"])
def test_a_loopback_host_gets_the_app_and_the_same_session_rebound_gets_nothing(
    home, request_with, host: str
) -> None:
    request_with(("Host", host), ("Origin", f"http://{host}"))
    at = open_page()
    assert SECRET in everything(at)  # the sidebar lists the knowledge base
    at = go(at, "settings")
    assert [t.value for t in at.title] == [SETTINGS.TITLE]
    # The session's websocket comes back under another name: its next run shows nothing.
    request_with(("Host", "attacker.test:8501"), ("Origin", "http://attacker.test:8501"))
    at = run(at)
    assert SECRET not in everything(at) and not at.text_input and _refused(at)


def test_no_request_at_all_is_the_test_harness_but_an_empty_host_is_refused(
    home, request_with
) -> None:
    at = open_page()  # no headers at all: AppTest, as every other page test runs
    assert SECRET in everything(at) and not at.warning
    request_with(("Host", ""))  # a real request, with an empty Host
    at = run(at)
    assert SECRET not in everything(at) and _refused(at)
