"""`zhixing --verbose`: retries, repaired replies and timings on stderr as they happen, and the
same records in the home's debug log, with the API key removed from both."""

from __future__ import annotations

import re
from pathlib import Path

from tests.command import zhixing
from tests.fake_openai import FakeOpenAI

DOC = """# 会话管理

会话空闲 15 分钟后必须失效。Session identifiers are rotated after login.

# 密码存储

Passwords are hashed with bcrypt; MD5 and SHA-1 are forbidden.
"""


def test_verbose_shows_retries_repairs_and_timings_and_the_log_keeps_them(tmp_path: Path):
    home = tmp_path / "home"
    doc = tmp_path / "rules.md"
    doc.write_text(DOC, encoding="utf-8")
    with FakeOpenAI(retry_after="0") as fake:
        env = {
            "OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": "sk-test-verbose-secret",
            "ZHIXING_LLM_CONCURRENCY": "1",
        }
        assert zhixing(home, "kb", "create", "kb", env=env).returncode == 0
        fake.fail("429", "malformed")  # a retry, then a reply the model repairs
        built = zhixing(home, "add", "kb", str(doc), "--verbose", env=env)
        assert built.returncode == 0, built.stderr
        quiet = zhixing(home, "search", "kb", "会话多久失效", env=env)
        loud = zhixing(home, "-v", "search", "kb", "会话多久失效", env=env)
    err = built.stderr
    assert re.search(r"LLM request to \S+ failed \(.*429.*\); retry 1 of \d+ in \d+\.\d\d s", err)
    assert "was invalid" in err and "asking once for a repair" in err
    assert re.search(r"chunk_knowledge answered by \S+ in \d+\.\d\d s", err)
    assert re.search(r"rules\.md: 1 pages, \d+ chunks, read in \d+\.\d\d s", err)
    assert re.search(r"embedded \d+ texts in \d+\.\d\d s", err)
    assert re.search(r"wrote \d+ vectors in \d+\.\d\d s", err)
    # Without the flag the command says only what it always says.
    assert quiet.returncode == loud.returncode == 0
    assert "searched" not in quiet.stderr and "answered by" not in quiet.stderr
    assert quiet.stdout == loud.stdout
    assert re.search(
        r"searched 1 query in 1 knowledge base in \d+\.\d\d s \(.*basic \d+\.\d\d s", loud.stderr
    )
    log = (home / "logs" / "zhixing.log").read_text(encoding="utf-8")
    for line in ("retry 1 of", "asking once for a repair", "answered by", "searched 1 query"):
        assert line in log
    assert "sk-test-verbose-secret" not in err + loud.stderr + log


def test_verbose_after_every_command_and_before_them(tmp_path: Path):
    home = tmp_path / "home"
    before = zhixing(home, "--verbose", "kb", "list")
    after = zhixing(home, "kb", "list", "-v")
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout
    assert "--verbose" in zhixing(home, "ask", "--help").stdout
