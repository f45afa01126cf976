"""Both build modes through a real ChatOpenAI talking HTTP to the fake OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

FAST = {"timeout_s": 1.0, "max_attempts": 3, "backoff_s": 0.01}


def _corpus(folder: Path, n: int) -> Path:
    path = folder / "corpus.jsonl"
    lines = []
    for i in range(n):
        text = (
            f"Rule {i}: Applications must validate Input {i}.\n"
            f"Output Encoding prevents Cross Site Scripting in module {i}."
        )
        lines.append(json.dumps({"id": f"r{i}", "title": f"Rule {i}", "text": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


def _service(tmp_path: Path, fake: FakeOpenAI, embedder, **overrides) -> KnowledgeService:
    options = {
        "openai_base_url": fake.url,
        "openai_api_key": "sk-test-secret",
        "llm_concurrency": 4,
        "embed_batch": 32,
        **overrides,
    }
    return KnowledgeService(
        Settings(home=tmp_path / "home", **options), embedder=embedder, llm_options=FAST
    )


@pytest.mark.parametrize("mode", ["index", "graph"])
def test_each_mode_costs_one_call_per_chunk_and_a_rebuild_costs_none(
    tmp_path, fake, embedder, mode
):
    corpus = _corpus(tmp_path, 6)
    with _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb", mode=mode)
        estimate = svc.builds.estimate("kb", [corpus])
        assert estimate.llm.by_role["chunk_knowledge"] == estimate.chunks == 6
        assert estimate.llm.cached == 0
        assert estimate.llm.prompt_tokens > 0 and fake.chat_count == 0  # estimating is free
        report = svc.builds.add("kb", [corpus])
        assert report.ok and report.chunks == 6 and report.questions > 0
        assert fake.chat_count == 6
        assert svc.builds.estimate("kb", [corpus]).llm.calls == 0  # nothing left to build
        stats = svc.graph.stats("kb")
        assert (stats.entities > 0) == (mode == "graph")
        hits = svc.search.query("Output Encoding Cross Site Scripting module 3", ["kb"], top_k=3)
        assert hits[0].document == "r3"

        fake.reset()
        svc.kbs.delete("kb")
        svc.kbs.create("kb", mode=mode)
        again = svc.builds.add("kb", [corpus])
        assert again.ok and again.chunks == 6 and fake.chat_count == 0  # all from the cache


def test_a_malformed_reply_is_repaired_once_then_the_chunk_is_degraded(tmp_path, fake, embedder):
    corpus = _corpus(tmp_path, 1)
    with _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        fake.fail("malformed")  # the repair attempt succeeds
        assert svc.builds.add("kb", [corpus]).degraded == 0
        assert fake.chat_count == 2

        other = tmp_path / "other.md"
        other.write_text("# Passwords\n\nPasswords must be hashed with Argon2id.\n", "utf-8")
        fake.reset()
        fake.fail("malformed", "invalid")  # the repair fails too
        report = svc.builds.add("kb", [other])
        assert report.ok and report.degraded == 1 and fake.chat_count == 2
        degraded = svc._home.catalog.db.execute("SELECT COUNT(*) FROM degraded_chunks").fetchone()[
            0
        ]
        assert degraded == 1
        assert svc.search.query("Argon2id", ["kb"], top_k=1)[0].document == "other.md"


def test_429_and_timeouts_are_retried(tmp_path, fake, embedder):
    corpus = _corpus(tmp_path, 2)
    fake.timeout_sleep_s = 2.0
    with _service(tmp_path, fake, embedder, llm_concurrency=1) as svc:
        svc.kbs.create("kb")
        fake.fail("429", "timeout")
        report = svc.builds.add("kb", [corpus])
        assert report.ok and report.degraded == 0
        assert svc.llm.stats.retries >= 2


@pytest.mark.slow
def test_a_server_down_past_the_pause_limit_stops_the_build_which_resumes_later(
    tmp_path, fake, embedder
):
    corpus = _corpus(tmp_path, 40)
    # The build pauses while the endpoint is away (tests/test_faults.py); past the limit it stops.
    with _service(tmp_path, fake, embedder, llm_max_pause_s=1.0) as svc:
        svc.kbs.create("kb", mode="graph")
        part = tmp_path / "part.jsonl"
        part.write_text("".join(corpus.read_text("utf-8").splitlines(True)[:32]), "utf-8")
        assert svc.builds.add("kb", [part]).ok
        done_calls = fake.chat_count
        fake.stop()
        report = svc.builds.add("kb", [corpus])
        assert not report.ok and "zhixing resume kb" in report.stopped
        assert "sk-test-secret" not in report.stopped
        fake.start()
        fake.reset()
        resumed = svc.builds.add("kb", [corpus])
        assert resumed.ok and len(resumed.skipped) == 32 and len(resumed.added) == 8
        assert fake.chat_count == 8 and done_calls == 32
        docs = svc.kbs.documents("kb")
        assert len(docs) == 40 and {d.status for d in docs} == {"indexed"}


@pytest.mark.parametrize("same", [True, False])
def test_an_llm_confirms_or_refuses_a_cross_language_merge(tmp_path, embedder, same):
    from tests.fake_openai import _prompt_text, _schema_of

    def responder(body):
        schema_name, _ = _schema_of(body)
        if schema_name == "SameEntity":
            return {"same": same, "canonical": ""}
        name = "SQL注入" if "SQL注入" in _prompt_text(body) else "SQL injection"
        return {
            "questions": [{"question": f"What is {name}?", "line_start": 1, "line_end": 1}],
            "entities": [{"name": name, "type": "vulnerability", "description": name}],
            "relations": [],
        }

    zh, en = tmp_path / "zh.md", tmp_path / "en.md"
    zh.write_text("SQL注入是一种攻击。\n", encoding="utf-8")
    en.write_text("SQL injection is an attack.\n", encoding="utf-8")
    with FakeOpenAI(responder) as fake, _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        assert svc.builds.add("kb", [en]).ok and svc.builds.add("kb", [zh]).ok
        confirmations = [b for b in fake.bodies() if "SameEntity" in json.dumps(b)]
        assert len(confirmations) == 1
        # The heuristics' "SQL" and "attack" are added beside (core/build/merge.py): count the pair.
        (pair,) = svc._home.catalog.db.execute(
            "SELECT COUNT(DISTINCT entity_id) FROM entity_aliases"
            " WHERE key IN ('sql injection', 'sql注入')"
        ).fetchone()
        assert pair == (1 if same else 2)


def test_a_relation_to_an_entity_of_another_chunk_is_linked_not_a_crash(tmp_path, embedder):
    """Regression (issue 13): a relation whose end is not among its own chunk's entities but is
    one of another chunk's used to raise AttributeError (`ends = []` shadowed the dict)."""
    from tests.fake_openai import _prompt_text

    def responder(body):
        if "Prepared Statement" in _prompt_text(body):  # the second document
            entities = [{"name": "Prepared Statement", "type": "control", "description": ""}]
            relations = [
                {
                    "source": "Prepared Statement",
                    "target": "SQL Injection",
                    "type": "prevents",
                    "description": "It prevents it.",
                }
            ]
        else:
            entities = [{"name": "SQL Injection", "type": "vulnerability", "description": ""}]
            relations = []
        return {
            "questions": [{"question": "What does the rule say?", "line_start": 1, "line_end": 1}],
            "entities": entities,
            "relations": relations,
        }

    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("SQL Injection changes a query with input.\n", encoding="utf-8")
    second.write_text("A Prepared Statement stops SQL Injection.\n", encoding="utf-8")
    with FakeOpenAI(responder) as fake, _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        assert svc.builds.add("kb", [first]).ok
        report = svc.builds.add("kb", [second])
        assert report.ok and report.degraded == 0, report.to_json()
        assert svc.graph.stats("kb").entities == 3  # and the heuristics' "SQL", added beside
        rows = svc._home.catalog.db.execute(
            "SELECT s.name, r.type, t.name FROM relations r JOIN entities s ON s.id = r.source_id"
            " JOIN entities t ON t.id = r.target_id"
        ).fetchall()
        assert sorted(rows) == [
            ("Prepared Statement", "prevents", "SQL Injection"),
            ("SQL", "related_to", "Prepared Statement"),  # symmetric: older entity first
        ]


def test_a_chunk_the_endpoint_keeps_failing_falls_back_alone_and_the_build_finishes(
    tmp_path, embedder
):
    from tests.fake_openai import _prompt_text

    def chaos(body):  # HTTP 500 on every try for the one chunk that names Rule 3
        return "500" if "Rule 3:" in _prompt_text(body) else None

    corpus = _corpus(tmp_path, 6)
    with FakeOpenAI(chaos=chaos) as fake, _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        report = svc.builds.add("kb", [corpus])
        assert report.ok and report.chunks == 6 and report.degraded == 1, report.to_json()
        assert report.fallbacks == {"request failed (HTTP 500)": 1}
        hits = svc.search.query("Rule 3 validate Input 3", ["kb"], strategies=["keyword"])
        assert hits and "Rule 3:" in hits[0].text  # still searchable by its text


def test_a_batch_the_endpoint_fails_whole_pauses_like_an_outage(tmp_path, embedder):
    state = {"failing": True}

    def chaos(body):
        return "500" if state["failing"] else None

    corpus = _corpus(tmp_path, 4)
    events = []
    with FakeOpenAI(chaos=chaos) as fake, _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb")

        def on_event(event):
            events.append(event.stage)
            if event.stage == "paused":
                state["failing"] = False  # the server recovers while the build waits

        report = svc.builds.add("kb", [corpus], on_event=on_event)
        assert report.ok and report.degraded == 0 and report.chunks == 4, report.to_json()
        assert "paused" in events and "resumed" in events


def test_an_entitys_attributes_sent_as_bounded_pairs_are_stored_as_a_dict(tmp_path, embedder):
    """The schema sent bounds everything a weak model could run on with (issue 34): a 0.5B model
    filled 24 entities and 400-character descriptions until its token limit cut the reply. An
    object's keys cannot be bounded in llama.cpp's grammar, so attributes go as pairs."""
    from tests.fake_openai import _schema_of

    sent: list[dict] = []

    def responder(body):
        sent.append(_schema_of(body)[1])
        return {
            "questions": [{"question": "Which level is TLS at?", "line_start": 1, "line_end": 1}],
            "entities": [
                {
                    "name": "TLS",
                    "type": "technology",
                    "description": "Transport Layer Security.",
                    "attributes": [{"key": "level", "value": "L2"}, {"key": " ", "value": "x"}],
                }
            ],
            "relations": [],
        }

    doc = tmp_path / "tls.md"
    doc.write_text("TLS 1.2 or later is required at level L2.\n", encoding="utf-8")
    with FakeOpenAI(responder) as fake, _service(tmp_path, fake, embedder) as svc:
        svc.kbs.create("kb", mode="graph")
        assert svc.builds.add("kb", [doc]).ok
        stored = svc._home.catalog.db.execute(
            "SELECT attributes FROM entities WHERE name = 'TLS'"
        ).fetchone()
    assert json.loads(stored[0]) == {"level": "L2"}
    schema = sent[0]
    entity = schema["$defs"]["ExtractedEntity"]["properties"]
    assert entity["attributes"]["type"] == "array" and entity["attributes"]["maxItems"] == 4
    assert entity["description"]["maxLength"] <= 200 and entity["name"]["maxLength"] <= 80
    assert schema["properties"]["entities"]["maxItems"] <= 12
    assert schema["properties"]["relations"]["maxItems"] <= 12
