"""A model that answers every tool turn with a pathological glob (issue 33).

The fake OpenAI server (a real HTTP server, tests/fake_openai.py) plays the whole model: it
researches and plans like a model, and then, on every turn of the task agent's tool loop, calls
`list_files` with fourteen `*` and a `!`, the glob a Python `re` spent 50 to 100 s on over
this 15-file sample with the interpreter lock held. The run must end with its report within
seconds, and another thread (another session of the same server) must keep running meanwhile.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, _schema_of, default_responder
from zhixing.core.config import Settings
from zhixing.core.llm.client import LLMClient
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "samples" / "springboot-shop"
HOSTILE = "*" * 14 + "!"  # seven `.*` in a row, then a character no path ends with
TASK = "Audit this project for SQL injection, per @kb"


class GlobModel:
    """Answers each role briefly; in the tool loop, always `list_files` with the glob."""

    def __init__(self, globs: list[str]) -> None:
        self.globs = globs
        self.tool_turns = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        if "list_files" in tools:
            self.tool_turns += 1
            calls = [{"name": "list_files", "arguments": {"glob": g}} for g in self.globs]
            return {"_tool_calls": calls}
        name, _ = _schema_of(body)
        answers: dict[str, dict[str, Any]] = {
            "AgentPlan": {"aspects": ["SQL"], "queries": [{"query": "SQL injection"}]},
            "EvidenceVerdict": {"sufficient": True, "missing": [], "covered": ["SQL"]},
            "GroundedAnswer": {"found": True, "answer": "Bind parameters [1].", "cited": [1]},
            "TaskPlan": {"steps": ["Audit the queries"]},
            "RevisedPlan": {
                "subtasks": [
                    {
                        "title": "SQL",
                        "goal": "Find queries built by concatenation",
                        "knowledge": [],
                        "patterns": [],
                    }
                ]
            },
            "FindingVerdict": {"verdict": "confirmed", "reason": "Seen."},
        }
        return answers.get(name) or default_responder(body)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # noqa: ANN001
    home = tmp_path_factory.mktemp("glob") / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("kb")
        svc.builds.add("kb", [ROOT / "samples" / "java-secure-coding-guideline.md"])
    return home


@pytest.mark.parametrize(
    "globs",
    [[HOSTILE], [HOSTILE, "*a" * 14 + "!", "**/" * 20 + "?*" * 16 + "!*"]],
    ids=["one", "three"],
)
def test_a_model_that_lists_files_with_a_pathological_glob_every_turn_cannot_stall_the_server(
    home: Path,
    embedder,  # noqa: ANN001
    globs: list[str],
) -> None:
    ticks = 0
    stop = threading.Event()

    def other_session() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.01)

    model = GlobModel(globs)
    outcome: dict[str, Any] = {}
    with FakeOpenAI(responder=model) as fake:
        settings = Settings(home=home, openai_base_url=fake.url, openai_api_key="sk-test")
        llm = LLMClient(settings, None, timeout_s=10.0, backoff_s=0.01)
        with KnowledgeService(settings, embedder=embedder, llm=llm) as svc:

            def task() -> None:
                events: list[dict[str, Any]] = []
                outcome["result"] = svc.tasks.run(
                    TASK, ["kb"], workspace=SHOP, on_event=events.append
                )
                outcome["events"] = events

            ticker = threading.Thread(target=other_session, daemon=True)
            runner = threading.Thread(target=task, daemon=True)
            started = time.monotonic()
            ticker.start()
            runner.start()
            runner.join(timeout=60)
            spent = time.monotonic() - started
            stop.set()
            ticker.join(timeout=5)
    assert not runner.is_alive(), f"the run was still going after {spent:.0f} s"
    result = outcome["result"]
    assert spent < 30 and result.report.strip()  # the run ended with its report
    listed = [e for e in outcome["events"] if e["node"] == "tool_result"]
    assert model.tool_turns >= 2 and len(listed) >= len(globs) * 2  # the glob really ran, often
    assert all(e["tool"] == "list_files" for e in listed)
    answered = [e["output"] for e in listed if e["ok"]]
    assert answered and set(answered) == {"(no files match)"}  # answered, not stalled
    # With the lock held by a backtracking match the other thread ticked 13 times in 99.6 s.
    assert ticks > spent * 20, (ticks, spent)
