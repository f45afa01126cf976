"""A model that cannot call tools still drives the task agent (issue 34, item 2): its subtasks go
on through structured turns that choose the tool, or to the offline executor with the model
reviewing, never through empty turns.

The models are the OpenAI fake (a real HTTP server), driven by `zhixing run` in this process (and
the service, for an endpoint whose probed capabilities say it returns no tool calls). Their tool
turns write prose, or a call in broken JSON, the way Qwen2.5-Coder-0.5B behind llama-server does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.command import Ran, zx
from tests.fake_openai import FakeOpenAI, _prompt_text, _schema_of, default_responder
from tests.test_task_llm import TASK, Auditor
from tests.test_task_offline import PLANTED, SAFE, SHOP

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "samples" / "java-secure-coding-guideline.md"
PROSE = "I will check the code for this subtask carefully and report what I find."
BROKEN = '{"name": "grep", "arguments": {"pattern": "executeQuery", "glob": "**/*.java"'
PLANTED_AT = {(file, line) for _, file, lines in PLANTED for line in lines}
_STEP = re.compile(r"^\d+\. (grep|read_file|list_files|search_knowledge|record_finding) ", re.M)
_HIT = re.compile(r"^(\S+?):(\d+): ", re.M)
_FIRST_PATTERN = re.compile(r"Grep patterns worth trying:\n(.*)\n")
_DONE = re.compile(r"\[subtask (\d+)\] done \(([^)]*)\)")


class NoToolCalls(Auditor):
    """A model behind a server whose tool turns hold no call: each tool-calling turn answers
    `tool_text` as content, `tool_calls` empty. Its structured turns (`ToolTurn`) grep the
    subtask's first pattern, read the first hit, record a finding where a hit is a planted issue,
    and say done; `unreadable` makes every structured turn a bare fence instead."""

    def __init__(self, tool_text: str, *, unreadable: bool = False) -> None:
        super().__init__()
        self.tool_text = tool_text
        self.unreadable = unreadable
        self.turn_prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        if body.get("tools"):  # every tool-calling turn, and any probe of one
            self.executor_bodies.append(body)
            return {"_content": self.tool_text}
        name, _ = _schema_of(body)
        if name == "ToolTurn":
            self.turn_prompts.append(_prompt_text(body))
            return {"_content": "```json"} if self.unreadable else _turn(_prompt_text(body))
        if name == "RevisedPlan":  # a plan it cannot write: the offline plan, one per clause
            return {"subtasks": []}
        if name in ("AgentPlan", "EvidenceVerdict", "GroundedAnswer", "TaskPlan", "FindingVerdict"):
            return super().__call__(body)
        return default_responder(body)  # anything else (a capability probe): the schema's least


def _turn(prompt: str) -> dict[str, Any]:
    """A correct structured turn for the prompt's subtask, from the steps it shows so far."""
    steps = prompt.split("Steps so far:", 1)[1]
    done = _STEP.findall(steps)
    hits = [(path, int(line)) for path, line in _HIT.findall(steps)]
    if not done:
        first = _FIRST_PATTERN.search(prompt)
        pattern = first.group(1) if first and first.group(1) != "(none)" else "execute"
        return {
            "thought": "Find the calls the clause is about.",
            "tool": "grep",
            "pattern": pattern,
        }
    if done == ["grep"] and hits:
        path, line = hits[0]
        return {
            "thought": "Read the code around the first match.",
            "tool": "read_file",
            "path": path,
            "start": max(1, line - 3),
            "end": line + 3,
        }
    planted = [hit for hit in hits if hit in PLANTED_AT]
    if "record_finding" not in done and planted:
        path, line = planted[0]
        return {
            "thought": "Request data reaches this call unchecked.",
            "tool": "record_finding",
            "path": path,
            "line": line,
            "title": "Untrusted data reaches a sink",
            "severity": "high",
        }
    return {"thought": "Checked the code this subtask is about.", "tool": "done"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("structured-turns") / "home"
    zx(home, "kb", "create", "kb")
    zx(home, "add", "kb", str(GUIDE))
    return home


def _run(home: Path, model: NoToolCalls, name: str, **server: Any) -> tuple[dict[str, Any], Ran]:
    """`zhixing run --json` with the model; each model its own name (its own cache entries)."""
    args = ("run", "kb", TASK, "--workspace", str(SHOP), "--json")
    with FakeOpenAI(responder=model, **server) as fake:
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-test", "ZHIXING_CHAT_MODEL": name}
        ran = zx(home, *args, env=env)
        model.bodies = fake.bodies()
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout), ran


def _ways(stderr: str) -> dict[int, str]:
    """How each subtask ran, from its `done (…)` line on stderr."""
    return {int(n): way for n, way in _DONE.findall(stderr)}


def _inspected(stderr: str) -> dict[int, set[str]]:
    """The tools each subtask ran that came back ok (its trace on stderr)."""
    out: dict[int, set[str]] = {}
    calls: dict[tuple[int, int], str] = {}
    for line in stderr.splitlines():
        call = re.match(r"\[subtask (\d+)\] #(\d+) (\w+) ", line)
        if call:
            calls[(int(call.group(1)), int(call.group(2)))] = call.group(3)
            last = (int(call.group(1)), int(call.group(2)))
        elif re.match(r"\[subtask \d+\]   -> ok: ", line):
            out.setdefault(last[0], set()).add(calls[last])
    return out


def _calls(stderr: str) -> dict[int, list[str]]:
    """Each subtask's tool calls, as its trace on stderr shows them."""
    out: dict[int, list[str]] = {}
    for n, call in re.findall(r"^\[subtask (\d+)\] #\d+ (.*)$", stderr, re.M):
        out.setdefault(int(n), []).append(call)
    return out


def _every_planted_issue_and_no_look_alike(findings: list[dict[str, Any]]) -> None:
    for clause, file, lines in PLANTED:
        assert any(f["file"] == file and f["line"] in lines for f in findings), (clause, file)
    for file, lines in SAFE:
        assert not [f for f in findings if f["file"] == file and f["line"] in lines], file


@pytest.mark.parametrize(
    ("tool_text", "name"), [(PROSE, "prose-model"), (BROKEN, "broken-json-model")]
)
def test_a_model_whose_tool_turns_hold_no_call_inspects_the_code_through_structured_turns(
    home: Path, tool_text: str, name: str
) -> None:
    model = NoToolCalls(tool_text)
    out, ran = _run(home, model, name)
    ways = _ways(ran.stderr)
    clauses = [n for n, way in ways.items() if way != "built-in"]
    assert clauses and all(ways[n] == "structured turns" for n in clauses), ways
    assert "done (llm)" not in ran.stderr
    inspected = _inspected(ran.stderr)
    assert all("grep" in inspected.get(n, set()) for n in clauses), inspected
    assert sum("read_file" in inspected.get(n, set()) for n in clauses) >= 3, inspected
    # At most one tool-calling turn a subtask: the first that holds no call ends them.
    assert 1 <= len(model.executor_bodies) <= len(clauses)
    # A turn's result reaches the next turn: the file lines read, numbered.
    assert any(re.search(r"\n\d+\| ", p) and "read_file {" in p for p in model.turn_prompts)
    recorded = [f for f in out["findings"] if f["rule"] == "model"]
    assert recorded and all((f["file"], f["line"]) in PLANTED_AT for f in recorded)
    _every_planted_issue_and_no_look_alike(out["findings"])
    assert "（大模型按结构化步骤选择工具，" in out["report"]  # the report names the way


def test_a_model_that_cannot_write_a_turn_either_hands_each_subtask_to_the_offline_executor(
    home: Path,
) -> None:
    model = NoToolCalls(BROKEN, unreadable=True)
    out, ran = _run(home, model, "mute-model")
    ways = _ways(ran.stderr)
    clauses = [n for n, way in ways.items() if way != "built-in"]
    assert clauses and all(ways[n] == "offline, model reviewing" for n in clauses), ways
    # Each subtask made the offline run's own calls, in its trace.
    offline = zx(home, "run", "kb", TASK, "--workspace", str(SHOP), env={"OPENAI_BASE_URL": None})
    assert _calls(ran.stderr) == _calls(offline.stderr) and _calls(ran.stderr)
    # Unreadable turns spend the budget: two in a row (each with its one repair) end them.
    assert len(model.turn_prompts) <= 4 * len(clauses)
    _every_planted_issue_and_no_look_alike(out["findings"])
    assert model.schemas.count("FindingVerdict") > 0  # the model still reviews the candidates
    assert "（离线执行，大模型复核，" in out["report"]


def test_an_endpoint_probed_without_tool_calls_gets_structured_turns_and_no_tool_turn(
    home: Path,
) -> None:
    model = NoToolCalls(PROSE)
    # The server writes every tool call as text, its probe's included: tool_calls is False.
    out, ran = _run(home, model, "probed-model", tool_calls_as_text=True)
    assert model.executor_bodies == []  # no tool-calling turn was spent on it
    ways = _ways(ran.stderr)
    clauses = [n for n, way in ways.items() if way != "built-in"]
    assert clauses and all(ways[n] == "structured turns" for n in clauses), ways
    inspected = _inspected(ran.stderr)
    assert all("grep" in inspected.get(n, set()) for n in clauses), inspected
    _every_planted_issue_and_no_look_alike(out["findings"])


class Careless(NoToolCalls):
    """Structured turns the way Qwen2.5-Coder-0.5B took them: the same grep again, then a
    finding on a line no turn has shown it (an import), then done."""

    def __init__(self) -> None:
        super().__init__(PROSE)

    def __call__(self, body: dict[str, Any]) -> Any:
        if _schema_of(body)[0] != "ToolTurn":
            return super().__call__(body)
        prompt = _prompt_text(body)
        self.turn_prompts.append(prompt)
        steps = len(_STEP.findall(prompt.split("Steps so far:", 1)[1]))
        if steps < 2:
            return {"thought": "Look for SQL.", "tool": "grep", "pattern": "execute"}
        if steps == 2:
            return {
                "thought": "SQL injection here.",
                "tool": "record_finding",
                "path": IMPORT[0],
                "line": IMPORT[1],
                "title": "SQL injection",
                "severity": "low",
            }
        return {"thought": "Done.", "tool": "done"}


IMPORT = ("src/main/java/com/example/shop/controller/CartController.java", 4)


def test_a_repeated_call_is_not_run_again_and_a_finding_on_a_line_never_shown_is_refused(
    home: Path,
) -> None:
    model = Careless()
    out, ran = _run(home, model, "careless-model")
    calls = _calls(ran.stderr)
    clauses = [n for n, way in _ways(ran.stderr).items() if way != "built-in"]
    assert clauses and all(way == "structured turns" for way in _ways(ran.stderr).values())
    for n in clauses:
        assert calls[n].count('grep {"pattern": "execute", "glob": "**/*"}') == 1, calls[n]
    assert any("the same call as step 1" in p for p in model.turn_prompts)
    refused = re.findall(
        r"-> refused: Refused: Line 4 of \S+CartController.java has not", ran.stderr
    )
    assert len(refused) == len(clauses)
    assert not [f for f in out["findings"] if (f["file"], f["line"]) == IMPORT]
    _every_planted_issue_and_no_look_alike(out["findings"])
