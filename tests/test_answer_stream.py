"""The answer shown as the model writes it: a streamed request read as it arrives (every
structured-output method), the live text numbered as the final answer is, `ask` reporting it as
`answer_text` events that are never stored, and the command printing it on a terminal."""

from __future__ import annotations

import dataclasses
import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.command import zhixing
from tests.fake_openai import FakeOpenAI, default_responder
from zhixing.cli.main import main as cli_main
from zhixing.core.answer import grounded_answer
from zhixing.core.config import Settings
from zhixing.core.llm import PROMPTS, LLMClient
from zhixing.core.llm.prompts import GroundedAnswer
from zhixing.core.models import Hit
from zhixing.core.service import KnowledgeService

ANSWER = (
    "Idle sessions expire after 15 minutes [3], and session identifiers are rotated after"
    " login [1][3]. Passwords are hashed with bcrypt [2]."
)


def _hit(n: int, text: str) -> Hit:
    return Hit(
        chunk_id=100 + n,
        score=1.0 / n,
        document=f"doc{n}.md",
        title=f"Doc {n}",
        page=1,
        text=text,
        strategies={"basic": n},
        kb="kb",
    )


HITS = [
    _hit(1, "Session identifiers are rotated after login."),
    _hit(2, "Passwords are hashed with bcrypt."),
    _hit(3, "Idle sessions expire after 15 minutes."),
]


def _answering(body: dict[str, Any]) -> dict[str, Any] | str:
    if "numbered search hits" in json.dumps(body.get("messages", [])):  # the answer's prompt
        return {"found": True, "answer": ANSWER, "cited": [3, 1, 2]}
    return default_responder(body)


def _client(fake: FakeOpenAI, method: str = "json_schema") -> LLMClient:
    settings = Settings(
        openai_base_url=fake.url, openai_api_key="sk-test", structured_output=method
    )
    return LLMClient(settings, timeout_s=5.0, backoff_s=0.01)


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_a_streamed_reply_is_read_as_it_arrives_and_validated_like_a_whole_one(method):
    with FakeOpenAI(_answering, stream_piece=5, stream_delay_s=0.01) as fake:
        client = _client(fake, method)
        variables = {"question": "q", "hits": "[1] a", "language": "English", "not_found": "-"}
        seen: list[tuple[float, str]] = []
        streamed = client.call_streaming(
            PROMPTS["grounded_answer"],
            variables,
            lambda partial: seen.append((time.monotonic(), str(partial.get("answer", "")))),
        )
        ended = time.monotonic()
        whole = client.call(PROMPTS["grounded_answer"], variables)
        assert fake.bodies()[0]["stream"] is True and not fake.bodies()[1].get("stream")
    assert streamed == whole == GroundedAnswer(found=True, answer=ANSWER, cited=[3, 1, 2])
    texts = [text for _, text in seen]
    assert len(texts) > 10  # piece by piece, not once at the end
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))
    assert texts[-1] == ANSWER
    # The first words were there well before the reply ended.
    assert seen[0][0] < ended - 0.1


def test_the_live_text_is_numbered_as_the_final_answer_and_ends_as_it_begins():
    with FakeOpenAI(_answering, stream_piece=3) as fake:
        shown: list[str] = []
        answer = grounded_answer(
            "How long do sessions last?", HITS, llm=_client(fake), on_text=shown.append
        )
    # Hit 3 is cited first, so it is [1]; the live text never shows the model's own numbers.
    assert answer.answer.startswith("Idle sessions expire after 15 minutes [1]")
    assert [c.chunk_id for c in answer.citations] == [103, 101, 102]
    assert shown and shown[-1] == answer.answer
    assert all(answer.answer.startswith(text) for text in shown)
    assert all(not text.endswith("[") for text in shown)  # a marker shows once it closes


def test_a_broken_stream_or_a_malformed_one_still_ends_in_a_valid_answer():
    with FakeOpenAI(_answering, stream_piece=4) as fake:
        client = _client(fake)
        fake.fail("cut")  # half the stream, then the connection closes
        cut = grounded_answer("sessions?", HITS, llm=client, on_text=lambda _: None)
        fake.fail("malformed")  # prose, not JSON: repaired by one more (whole) request
        shown: list[str] = []
        repaired = grounded_answer("sessions?", HITS, llm=client, on_text=shown.append)
    assert cut.found and cut.answer.startswith("Idle sessions")
    assert repaired.found and repaired.answer == cut.answer
    assert shown == [] or shown[-1] == repaired.answer


def test_ask_reports_the_answer_as_it_grows_and_stores_only_the_finished_one(tmp_path: Path):
    with FakeOpenAI(_answering, stream_piece=6) as fake:
        settings = Settings(home=tmp_path / "home", openai_base_url=fake.url, openai_api_key="k")
        with KnowledgeService(settings) as svc:
            svc.kbs.create("kb")
            doc = tmp_path / "rules.md"
            doc.write_text(
                "# Sessions\n\nIdle sessions expire after 15 minutes.\n", encoding="utf-8"
            )
            svc.builds.add("kb", [doc])
            nodes: list[str] = []
            texts: list[str] = []

            def on_event(event: Any) -> None:
                nodes.append(event["node"])
                if event["node"] == "answer_text":
                    texts.append(event["text"])

            result = svc.search.ask(
                "How long until an idle session expires?", ["kb"], max_rounds=1, on_event=on_event
            )
            stored = svc._home.runs.recent(1)[0]  # the run log as stored
    streamed = [n for n in nodes if n == "answer_text"]
    assert result.answer.found  # the fake's answer cites hit 1, the one piece of evidence
    assert len(streamed) > 1 and nodes.index("answer_text") < nodes.index("answer")
    assert all(result.answer.answer.startswith(text) for text in texts)
    assert "answer_text" not in {e["node"] for e in result.events}
    assert "answer_text" not in json.dumps(dataclasses.asdict(stored))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_command_prints_the_answer_as_it_is_written_on_a_terminal(tmp_path: Path, monkeypatch):
    home = tmp_path / "home"
    doc = tmp_path / "rules.md"
    doc.write_text("# Sessions\n\nIdle sessions expire after 15 minutes.\n", encoding="utf-8")
    writes: list[str] = []
    lock = threading.Lock()

    class Recording(_Terminal):
        def write(self, text: str) -> int:
            with lock:
                writes.append(text)
            return super().write(text)

    with FakeOpenAI(_answering, stream_piece=4) as fake:
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "k"}
        assert zhixing(home, "kb", "create", "kb", env=env).returncode == 0
        assert zhixing(home, "add", "kb", str(doc), env=env).returncode == 0
        terminal = Recording()
        monkeypatch.setattr("sys.stdout", terminal)
        monkeypatch.setenv("ZHIXING_HOME", str(home))
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        code = cli_main(
            ["ask", "kb", "How long until an idle session expires?", "--max-rounds", "1"]
        )
        monkeypatch.undo()
    out = terminal.getvalue()
    assert code == 0
    assert out.count("expire after 15 minutes, and") == 1  # streamed, not printed twice
    assert len([w for w in writes if w]) > 10
    assert "\n[1] " in out  # then the citations
