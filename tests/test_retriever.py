"""ZhixingRetriever: a knowledge base built here, read by a LangChain app (an LCEL chain).

The sample home (app/samples, built offline) is searched through the retriever; the chain's
model is `ChatOpenAI` against the HTTP fake, which answers from the context it was sent.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_openai import ChatOpenAI

from tests.fake_openai import FakeOpenAI
from zhixing.cli.retriever import ZhixingRetriever
from zhixing.core.auth import User
from zhixing.core.config import Settings
from zhixing.core.errors import AccessError, NotFoundError
from zhixing.core.service import KnowledgeService

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path, sample_home):  # noqa: ANN201
    shutil.copytree(sample_home, tmp_path / "home")
    return tmp_path / "home"


def test_documents_carry_where_the_text_is(home, monkeypatch) -> None:
    monkeypatch.delenv("ZHIXING_EMBEDDING", raising=False)
    with ZhixingRetriever.from_home(home, knowledge_bases=["kb"], top_k=3) as retriever:
        docs = retriever.invoke("How long until an idle session expires?")
    assert len(docs) == 3 and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert "15 minutes" in top.page_content
    meta = top.metadata
    assert meta["knowledge_base"] == "kb" and meta["document"].endswith(".md")
    assert all(d.metadata["source"] == d.metadata["document"] for d in docs)
    assert meta["chunk_id"] == int(top.id) > 0
    assert 1 <= meta["line_start"] <= meta["line_end"] and meta["page"] >= 0
    assert meta["strategies"] and meta["score"] > 0
    # The lines named are the lines of the sample that hold the text.
    sample = ROOT / "app" / "samples" / Path(meta["document"]).name
    lines = sample.read_text(encoding="utf-8").splitlines()
    assert "15 minutes" in "\n".join(lines[meta["line_start"] - 1 : meta["line_end"]])


def test_three_asked_are_three_returned_with_the_chinese_chunk_that_answers(
    home, monkeypatch
) -> None:
    # Offline the keyword search matches this question squarely, so the fusion keeps only its
    # one hit; the dense search's best (the Chinese session rule) must still come back.
    monkeypatch.delenv("ZHIXING_EMBEDDING", raising=False)
    question = "How long until an idle session expires?"
    with ZhixingRetriever.from_home(home, knowledge_bases=["kb"], top_k=3) as retriever:
        fused = retriever.service.search.query(question, ["kb"], top_k=3)
        docs = retriever.invoke(question)
        one = ZhixingRetriever(service=retriever.service, knowledge_bases=["kb"], top_k=1)
        assert len(one.invoke(question)) == 1
    assert len(fused) < 3  # the case the retriever fills up
    assert [d.metadata["chunk_id"] for d in docs[: len(fused)]] == [h.chunk_id for h in fused]
    assert len({d.id for d in docs}) == 3
    chinese = [d for d in docs if d.metadata["source"] == "java-secure-coding-zh.md"]
    assert any("15" in d.page_content and "会话" in d.page_content for d in chinese)


def test_a_with_block_closes_the_service_it_opened_and_leaves_a_lent_one_open(home) -> None:
    with ZhixingRetriever.from_home(home, knowledge_bases=["kb"]) as retriever:
        assert retriever.invoke("session timeout")
    with pytest.raises(Exception, match="closed"):
        retriever.service.search.query("session timeout", ["kb"])
    with pytest.raises(ValueError, match="top_k"):
        ZhixingRetriever.from_home(home, top_k=0)
    with KnowledgeService(Settings(home=home)) as service:
        with ZhixingRetriever(service=service, knowledge_bases=["kb"]) as lent:
            assert lent.invoke("session timeout")
        assert service.search.query("session timeout", ["kb"])  # still open


def test_the_retriever_feeds_an_lcel_chain_that_answers_from_it(home, monkeypatch) -> None:
    def from_context(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        rule = re.search(r"[^.\n]*expire[^.\n]*\.", prompt)
        return f"From the knowledge base: {rule.group(0).strip() if rule else 'nothing'}"

    monkeypatch.delenv("ZHIXING_EMBEDDING", raising=False)
    retriever = ZhixingRetriever.from_home(home, knowledge_bases=["kb"], top_k=4)
    prompt = ChatPromptTemplate.from_template(
        "Answer only from this context.\n\n{context}\n\nQuestion: {question}"
    )

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(f"[{d.metadata['document']}] {d.page_content}" for d in docs)

    with FakeOpenAI(from_context) as fake:
        model = ChatOpenAI(model="fake-chat", base_url=fake.url, api_key="sk-test")
        chain = (
            {"context": retriever | format_docs, "question": RunnablePassthrough()}
            | prompt
            | model
            | StrOutputParser()
        )
        try:
            answer = chain.invoke("When do idle sessions expire?")
        finally:
            retriever.close()
        sent = fake.requests[-1]["messages"][-1]["content"]
    assert "java-secure-coding" in sent and "Question: When do idle sessions expire?" in sent
    assert answer == "From the knowledge base: Idle sessions expire after 15 minutes."


def test_a_viewer_retrieves_only_what_they_may_see(home) -> None:
    with KnowledgeService(Settings(home=home)) as service:
        service.users.add("alice", "viewer", "a long enough password")
        service.users.add("bob", "viewer", "another long password")
        service.kbs.restrict("kb", ["alice"])
        alice = ZhixingRetriever(service=service.as_user(User("alice", "viewer")))
        bob = ZhixingRetriever(service=service.as_user(User("bob", "viewer")))
        assert alice.invoke("idle session timeout")
        assert bob.invoke("idle session timeout") == []  # all he may see: nothing
        with pytest.raises((NotFoundError, AccessError)):
            ZhixingRetriever(service=bob.service, knowledge_bases=["kb"]).invoke("timeout")
