"""A hostile project archive uploaded on the Agent page in Chromium (issue 33).

The archive is 0.6 MB; its first tar header is a GNU long-name or pax record declaring 600 MiB
of name, which really follow, compressed (tests/hostile_archives.py). At 4d2a7e4 `tarfile` read
that name whole inside the Streamlit server (6.4 GB for a 778 KB archive; a 2.9 MB one got the
server OOM-killed). Now the page shows a one-sentence refusal, the server's peak RSS (VmHWM)
stays under 400 MB, and nothing is left in the home's runs or uploads folders.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import psutil
import pytest

from tests.browser import chromium, open_page, require_chromium, serve_app, settle
from tests.hostile_archives import MiB, long_name_tar
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.process]
TIMEOUT_MS = 120_000
PEAK_BYTES = 400 * MiB


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):  # noqa: ANN001
    require_chromium()
    root = tmp_path_factory.mktemp("archive")
    home = root / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("rules")
    with serve_app(home) as url:
        yield url, home, root


def _server(url: str) -> psutil.Process:
    port = url.rsplit(":", 1)[1]
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "--server.port" in cmdline and port in cmdline:
            return process
    raise AssertionError(f"no streamlit process serves {url}")


def _peak_rss(process: psutil.Process) -> int:
    status = Path(f"/proc/{process.pid}/status").read_text()
    kb = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    assert kb is not None
    return int(kb.group(1)) * 1024


def _everything_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.exists() else []


@pytest.mark.parametrize("kind", [b"L", b"x"], ids=["gnu-long-name", "pax"])
def test_an_uploaded_tar_with_a_600_mib_name_is_refused_in_bounded_memory(
    served,  # noqa: ANN001
    kind: bytes,
) -> None:
    url, home, root = served
    archive = long_name_tar(root / f"project-{kind.decode()}.tar.gz", kind, declared=600 * MiB)
    server = _server(url)
    with chromium() as browser:
        page = open_page(browser, f"{url}/agent")
        page.locator(".st-key-agent-archive input[type=file]").set_input_files(
            {
                "name": "project.tar.gz",
                "mimeType": "application/gzip",
                "buffer": archive.read_bytes(),
            }
        )
        settle(page)
        box = page.locator(".st-key-agent-input textarea")
        box.fill("@rules Audit this project for SQL injection")
        box.press("Enter")
        alert = page.locator('[data-testid="stAlert"]').filter(has_text="was refused")
        alert.first.wait_for(timeout=TIMEOUT_MS)
        settle(page)
        shown = alert.first.inner_text()
    assert "600 MiB" in shown and "a" * 61 not in shown, shown[:400]
    assert len(shown) < 400
    assert _peak_rss(server) < PEAK_BYTES, f"VmHWM {_peak_rss(server) / MiB:.0f} MiB"
    left: list[Path] = []
    for _ in range(50):  # the run's cleanup ends a moment after the page shows the sentence
        left = _everything_under(home / "runs") + _everything_under(home / "uploads")
        if not left:
            break
        time.sleep(0.1)
    assert left == []
