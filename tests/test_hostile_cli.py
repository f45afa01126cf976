"""The CLI against a careless model and a flaky gateway (issue 13's "Done when").

One fake server plays a whole misbehaving model (tests/hostile_llm.py `ChaosModel`): schema-drawn
hostile replies in turn with valid ones for every role, a judge that never says enough, a
chunk that never gets a usable reply, tool calls to unknown tools and with unreadable
arguments, and now and then HTTP 500, 429 with Retry-After, a cut-off reply or a hung one.
`zhixing add`, `search`, `graph`, `ask` and `run` must each exit 0 with no traceback (run in
this process through `main(argv)`, tests/command.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.command import Ran, zhixing
from tests.fake_openai import FakeOpenAI
from tests.hostile_llm import ChaosModel
from zhixing.core.ask.prompts import AgentPlan, RefinedQueries
from zhixing.core.llm.prompts import EntityDescription, GroundedAnswer, SameEntity
from zhixing.core.llm.schemas import ChunkKnowledge
from zhixing.core.search.rewrite import QueryRewrites
from zhixing.core.task.prompts import RevisedPlan, TaskPlan

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

ZH = """# 会话管理要求

用户登录成功后必须重新生成会话标识，防止会话固定攻击。
空闲会话在 15 分钟后失效，绝对有效期不超过 8 小时。

## SQL 注入防护

禁止使用字符串拼接构造 SQL 语句，必须使用参数化查询（PreparedStatement）。
"""
EN = """# Logging baseline

Applications must never write passwords, session tokens or card numbers to log files.
Log entries carry a timestamp, the user id and the outcome of the event.
"""
POISONED = f"""# Appendix

{ChaosModel.POISON}: this appendix lists the retention period of audit records: one year.
"""


def _ok(run: Ran) -> str:
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout
    return run.stdout


def test_build_ask_and_run_through_a_careless_model_and_a_flaky_gateway(tmp_path: Path) -> None:
    model = ChaosModel(
        [
            ChunkKnowledge,
            SameEntity,
            EntityDescription,
            QueryRewrites,
            GroundedAnswer,
            AgentPlan,
            RefinedQueries,
            TaskPlan,
            RevisedPlan,
        ]
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in (("zh.md", ZH), ("en.md", EN), ("appendix.md", POISONED)):
        (docs / name).write_text(text, encoding="utf-8")
    for n, topic in enumerate(["Password Storage", "Cross Site Scripting", "Access Control"]):
        (docs / f"rule-{n}.md").write_text(
            f"# {topic}\n\nRule {n}: {topic} requires Input Validation and Output Encoding.\n",
            encoding="utf-8",
        )
    with FakeOpenAI(model, chaos=model.faults, retry_after="0.2", timeout_sleep_s=0.3) as fake:
        home = tmp_path / "home"
        endpoint = {
            "OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": "sk-test-chaos",
            "ZHIXING_LLM_CONCURRENCY": "4",
        }

        def _zhixing(*args: str) -> Ran:
            return zhixing(home, *args, env=endpoint)

        _ok(_zhixing("kb", "create", "kb", "--mode", "graph"))
        summary = json.loads(_ok(_zhixing("add", "kb", str(docs), "--json")))
        assert summary["added"] == 6 and not summary["failed"] and not summary["stopped"]
        assert summary["degraded"] >= 1  # the poisoned chunk fell back to its text...
        assert sum(summary["fallbacks"].values()) == summary["degraded"]
        assert summary["rejected"]  # ...and the careless replies' bad parts were counted
        for query, document in (
            ("会话固定", "zh.md"),
            ("passwords log files", "en.md"),
            ("retention period audit records", "appendix.md"),
        ):
            hits = json.loads(_ok(_zhixing("search", "kb", query, "--json")))["hits"]
            assert any(Path(h["document"]).name == document for h in hits), (query, hits)
        graph = json.loads(_ok(_zhixing("graph", "kb", "--json")))
        assert graph["entities"] > 0
        asked = json.loads(_ok(_zhixing("ask", "kb", "会话超时和日志分别有什么要求？", "--json")))
        assert len(asked["rounds"]) == 3  # the judge never said enough: the limit stopped it
        assert asked["answer"].strip()
        report = _ok(
            _zhixing(
                "run",
                "kb",
                "审计这个项目",
                "--workspace",
                str(ROOT / "samples" / "springboot-shop"),
            )
        )
        assert report.strip()
    assert fake.chat_count > 20
