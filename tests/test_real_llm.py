"""The LLM path end to end on a real model (issue 34): Qwen2.5-Coder-0.5B-Instruct on llama.cpp's
`llama-server`, one slot, CPU (tests/real_llm.py). Run by `make test-real`, after `make test`
in CI; never by `make test` or `make test-fast`.

The bar is the issue's: the model adds, never subtracts. Each test records the model's calls,
tokens and wall time (printed at the end of the session and written to real_llm_usage.json in
pytest's base temp dir).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import test_task_offline as offline
from tests.command import Ran, zx
from tests.pages import open_page, run
from tests.real_llm import real_env, real_server, usage  # noqa: F401 (fixtures)
from zhixing.core.answer_reply import NOT_FOUND_ZH

pytestmark = pytest.mark.real_llm

HSTS = """# HTTP Strict Transport Security

HTTP Strict Transport Security (HSTS) tells a browser to reach a site only over HTTPS.

## Recommended configuration

Send the header on every HTTPS response. Simple example, using a long (2 years = 63072000
seconds) max-age: `Strict-Transport-Security: max-age=63072000; includeSubDomains; preload`.
Use includeSubDomains so that every subdomain is covered too: a subdomain left on plain HTTP
lets an attacker set cookies for the parent domain. Add preload only once every subdomain
serves HTTPS.
"""

ZH = """# 口令存储规范

## 哈希算法

口令必须使用 Argon2id 或 bcrypt 加盐哈希后存储，禁止使用 MD5 或 SHA-1。
bcrypt 的工作因子不得低于 12。口令明文不得写入日志。
"""

QUESTION = (
    "What is the recommended max-age for the HSTS header, and should includeSubDomains be used?"
)


def _says_the_max_age(text: str) -> bool:
    return "63072000" in text or "2 years" in text


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, real_env: dict[str, str]) -> Path:  # noqa: F811
    return tmp_path_factory.mktemp("real") / "home"


@pytest.fixture(scope="module")
def built(
    home: Path,
    real_env: dict[str, str],  # noqa: F811
    real_server,  # noqa: ANN001, F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    docs = tmp_path_factory.mktemp("docs")
    (docs / "hsts.md").write_text(HSTS, encoding="utf-8")
    (docs / "password.md").write_text(ZH, encoding="utf-8")
    since = real_server.mark()
    zx(home, "kb", "create", "web", "--mode", "graph", env=real_env)
    ran = zx(
        home,
        "add",
        "web",
        str(docs / "hsts.md"),
        str(docs / "password.md"),
        "--json",
        env=real_env,
    )
    spent = real_server.usage(since)
    real_server.records.append({"test": "graph build of two documents", **spent})
    return {
        "summary": json.loads(ran.stdout.strip().splitlines()[-1]),
        "stderr": ran.stderr,
        "wall_s": spent["wall_s"],
    }


def _estimated_seconds(stderr: str) -> float:
    """The model time `zhixing add` estimated before it started ("... about 3 min of model
    time.")."""
    found = re.search(
        r"LLM estimate: .*?(under a second|about ([0-9.]+) (s|min|h)) of model", stderr
    )
    assert found, stderr
    if found.group(1) == "under a second":
        return 0.5
    return float(found.group(2)) * {"s": 1, "min": 60, "h": 3600}[found.group(3)]


def test_a_graph_build_of_two_documents_through_the_model_is_whole_and_never_pauses(
    built: dict[str, Any],
    home: Path,
    real_env: dict[str, str],  # noqa: F811
) -> None:
    summary, stderr = built["summary"], built["stderr"]
    print(json.dumps(summary))
    assert summary["failed"] == [] and not summary["stopped"], summary
    assert summary["degraded"] == 0, summary
    assert "paused" not in stderr.lower() and "cannot be reached" not in stderr, stderr
    # No request was re-sent: every retry is logged ("... failed (...); retry 1 of 3 ...").
    logged = (home / "logs" / "zhixing.log").read_text(encoding="utf-8")
    assert not re.search(r"failed \(.*\); retry \d+ of", logged), logged[-3000:]
    assert "timed out; at most" not in logged
    graph = json.loads(zx(home, "graph", "web", "--json", "--limit", "500", env=real_env).stdout)
    types = set(graph["types"])  # without --entity: {"types": {TYPE: N}, ...}
    assert types and len(types) <= 15, sorted(types)
    estimated, real = _estimated_seconds(stderr), built["wall_s"]
    print(f"model time estimated {estimated:.0f} s, took {real:.0f} s")
    assert real / 2 <= estimated <= real * 2, (estimated, real)


@pytest.fixture
def web(built, home: Path, real_env: dict[str, str], usage) -> Callable[..., Ran]:  # noqa: F811
    """`zhixing ARGS` against the built knowledge base with the real model, its usage logged."""
    return lambda *args: zx(home, *args, env=real_env)


def test_search_summary_answers_the_hsts_question_from_its_top_hit(web: Callable[..., Ran]) -> None:
    ran = web("search", "web", QUESTION, "--summary")
    print(ran.stdout)
    assert "Strict-Transport-Security" in ran.stdout or "HSTS" in ran.stdout
    assert _says_the_max_age(ran.stdout.split("\n\n")[0] + ran.stdout), ran.stdout
    assert "No relevant information" not in ran.stdout, ran.stdout


def test_ask_answers_the_hsts_question_from_its_top_hit(web: Callable[..., Ran]) -> None:
    ran = web("ask", "web", QUESTION, "--json")
    result = json.loads(ran.stdout)
    answer = json.dumps(result.get("answer", result), ensure_ascii=False)
    print(answer)
    assert _says_the_max_age(answer), answer
    assert "includeSubDomains" in answer, answer
    assert "No relevant information" not in answer, answer


def test_the_notebooks_answer_and_agentic_cells_answer_from_the_hits(
    built: dict[str, Any],
    home: Path,
    real_env: dict[str, str],  # noqa: F811
    usage: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Recall page (AppTest) as a user drives it: an answer cell, then an agentic one, in
    Chinese over the Chinese document."""
    from zhixing.app.services import knowledge_service

    monkeypatch.setenv("ZHIXING_HOME", str(home))
    for name, value in real_env.items():
        monkeypatch.setenv(name, value)
    knowledge_service.clear()
    try:
        at = open_page("recall", timeout=900)
        # Questions no earlier test asked, so the model answers them (not the LLM cache).
        for cells, (mode, question) in enumerate(
            (
                ("answer", "口令应该用什么哈希算法存储？"),
                ("agentic", "存储口令时禁止使用哪些算法？"),
            ),
            start=1,
        ):
            at.text_input(key="recall-query").input(question)
            at.radio(key="recall-mode").set_value(mode)
            at.button(key="recall-run").click()
            run(at)
            # One cited answer per cell so far (the first stays on the page above the second);
            # the hits' own text, shown under an answer, carries no [n] marker.
            answers = [m.value for m in at.markdown if re.search(r"\[\d\]", m.value)]
            print(mode, answers[-1:] if answers else [m.value for m in at.markdown][-5:])
            assert len(answers) >= cells, [m.value for m in at.markdown][-8:]
            # An agentic answer may say an aspect is not found; the answer as a whole may not.
            assert NOT_FOUND_ZH not in answers[-1].splitlines()[0], answers
            assert not at.error, [e.value for e in at.error]
        assert any(s.label.startswith("第 1 轮") for s in at.status)  # the agentic rounds
    finally:
        knowledge_service().close()
        knowledge_service.clear()


def test_the_task_run_reports_all_seven_planted_issues_and_none_on_a_look_alike(
    tmp_path: Path,
    real_env: dict[str, str],  # noqa: F811
    usage: None,  # noqa: F811
) -> None:
    home = tmp_path / "home"
    zx(home, "kb", "create", "kb")
    zx(home, "add", "kb", str(offline.SAMPLES / offline.GUIDE))
    ran = zx(
        home, "run", "kb", offline.TASK, "--workspace", str(offline.SHOP), "--json", env=real_env
    )
    result = json.loads(ran.stdout)
    findings = [(f["file"], f["line"]) for f in result["findings"]]
    print(json.dumps(result["findings"], ensure_ascii=False)[:4000])
    missing = [
        f"{clause} {file}:{sorted(lines)}"
        for clause, file, lines in offline.PLANTED
        if not any(f == file and line in lines for f, line in findings)
    ]
    assert not missing, f"missing with the model: {missing}"
    wrong = [
        f"{f}:{line}"
        for file, lines in offline.SAFE
        for f, line in findings
        if f == file and line in lines
    ]
    assert not wrong, wrong
