"""The built wheel, installed outside the checkout: complete (pages, samples, the Streamlit
config), under the one import name `zhixing`, and it runs: the command builds and searches, the
app's script renders, and `zhixing serve` answers on its port.

The fresh virtual environment gets the dependencies from this one through a `.pth` line (no
package index at test time); the project itself comes only from the wheel.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.process, pytest.mark.slow]


def _run(*args: str | Path, cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the fresh environment's bin folder, an environment for its processes, the wheel)."""
    work = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZHIXING_", "OPENAI_"))}
    env.pop("PYTHONPATH", None)
    _run(
        sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation",
        "-w", work / "dist", "-q", cwd=work, env=env,
    )  # fmt: skip
    (wheel,) = (work / "dist").glob("zhixing-*.whl")
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work, env=env)
    python = venv / "bin" / "python"
    site = Path(
        _run(
            python,
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            cwd=work,
            env=env,
        ).strip()
    )
    # The dependencies, from this environment; never the checkout (not even its editable hook).
    (site / "dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    _run(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "-q", wheel, cwd=work, env=env,
    )  # fmt: skip
    return venv / "bin", env, wheel


def test_the_wheel_carries_the_app_whole_under_one_import_name(installed):
    _, _, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.endswith(".dist-info/RECORD")}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"zhixing"}
    for folder in ("core", "app", "cli"):
        sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*.py")}
        assert {f"zhixing/{s}" for s in sources} <= set(names), folder
    expected = [
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py")),
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / "samples").rglob("*") if p.is_file()),
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / "app" / "samples").glob("*.md")),
        ".streamlit/config.toml",
    ]
    assert {f"zhixing/{e}" for e in expected} <= set(names)
    assert not any("secrets.toml" in name for name in names)


def test_the_installed_command_builds_and_searches_outside_the_checkout(installed, tmp_path):
    bin_, env, _ = installed
    env = {**env, "ZHIXING_HOME": str(tmp_path / "home")}
    zhixing = bin_ / "zhixing"
    _run(zhixing, "kb", "create", "kb", cwd=tmp_path, env=env)
    added = json.loads(
        _run(zhixing, "add", "kb", ROOT / "app" / "samples", "--json", cwd=tmp_path, env=env)
    )
    assert added["added"] == 2 and added["failed"] == []
    found = json.loads(_run(zhixing, "search", "kb", "会话超时", "--json", cwd=tmp_path, env=env))
    assert found["hits"] and found["hits"][0]["document"].startswith("java-secure-coding")


def test_the_installed_app_renders_and_serves(installed, tmp_path):
    bin_, env, _ = installed
    env = {**env, "ZHIXING_HOME": str(tmp_path / "home")}
    # In the package's folder, as `zhixing serve` runs it: the wheel's .streamlit/config.toml
    # keeps it on localhost, where no login is asked, and the Build page opens.
    script = (
        "import importlib.util as u, os, pathlib, zhixing\n"
        "from streamlit.testing.v1 import AppTest\n"
        "print(zhixing.__file__, *(u.find_spec(n) for n in ('core', 'app', 'cli')))\n"
        "os.chdir(pathlib.Path(zhixing.__file__).parent)\n"
        "at = AppTest.from_file('app/main.py', default_timeout=120).run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "print(os.getcwd())\n"
        "print([t.value for t in at.title], [b.label for b in at.button])\n"
    )
    out = _run(bin_ / "python", "-c", script, cwd=tmp_path, env=env).splitlines()
    # The one import name comes from the wheel, and the checkout's folders are not importable.
    where = out[0].split()
    assert not where[0].startswith(str(ROOT)) and where[1:] == ["None", "None", "None"]
    assert not out[1].startswith(str(ROOT))
    assert "['构建']" in out[2] and "建立示例知识库" in out[2]  # the sample's button: app/samples
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [bin_ / "zhixing", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        health = ""
        while time.monotonic() < deadline and served.poll() is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/_stcore/health", timeout=2
                ) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert health == "ok", served.stderr.read() if served.poll() is not None else "no answer"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
            assert page.status == 200 and b"<html" in page.read().lower()
    finally:
        served.terminate()
        served.wait(timeout=30)
