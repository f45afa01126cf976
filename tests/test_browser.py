"""The app in a real browser: Playwright driving Debian's Chromium against `streamlit run`.

One app server for the module (a temp home, the LLM pointed at the fake OpenAI server with an
injected latency), one browser; the tests run in file order, each building on the state the one
before left (the sample knowledge base, then an uploaded one). The app runs offline, its
default; for the agent it is restarted on the same home with its LLM pointed at the fake OpenAI
server. Screenshots of every page are saved to docs/screenshots for the README.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.browser import (
    ROOT,
    chromium,
    is_local,
    require_chromium,
    serve_app,
    settle,
)
from tests.fake_openai import FakeOpenAI

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SHOTS = ROOT / "docs" / "screenshots"
TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(latency_s=0.4) as server:
        yield server


class Servers:
    """The app on one temp home, served offline or against the fake LLM, one at a time:
    Milvus Lite lets one process open the home, so switching stops the other server."""

    def __init__(self, home: Path, fake: FakeOpenAI) -> None:
        self.home, self.fake = home, fake
        self.mode: str | None = None
        self._stack: ExitStack | None = None
        self.url = ""

    def serve(self, mode: str) -> str:
        if mode != self.mode:
            self.close()
            env = {}
            if mode == "llm":
                env = {"OPENAI_BASE_URL": self.fake.url, "OPENAI_API_KEY": "sk-browser-test"}
            self._stack = ExitStack()
            self.url = self._stack.enter_context(serve_app(self.home, env))
            self.mode = mode
        return self.url

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack, self.mode = None, None


@pytest.fixture(scope="module")
def servers(tmp_path_factory, fake: FakeOpenAI) -> Iterator[Servers]:
    require_chromium()
    home = tmp_path_factory.mktemp("browser") / "home"
    home.mkdir()
    servers = Servers(home, fake)
    yield servers
    servers.close()


@pytest.fixture
def app_url(servers: Servers) -> str:
    """The app in its default, offline mode."""
    return servers.serve("offline")


@pytest.fixture
def llm_url(servers: Servers) -> str:
    """The app with its LLM pointed at the fake OpenAI server (0.4 s a call)."""
    return servers.serve("llm")


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def requests_seen() -> list[str]:
    return []


@pytest.fixture
def page(browser, requests_seen: list[str]):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.on("request", lambda request: requests_seen.append(request.url))
    yield page
    context.close()


def _open(page, url: str, path: str = "") -> None:
    page.goto(f"{url}/{path}")
    page.get_by_test_id("stSidebar").wait_for()
    settle(page)


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def test_first_start_builds_the_sample_from_the_empty_state(page, app_url: str) -> None:
    _open(page, app_url)
    page.get_by_text("还没有知识库", exact=False).first.wait_for()
    _shot(page, "empty-state")
    page.get_by_role("button", name=re.compile("建立示例知识库")).click()
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text(re.compile(r"sample · 3 篇文档")).wait_for(timeout=TIMEOUT_MS)
    settle(page)


def test_the_app_loads_nothing_from_outside_localhost(requests_seen: list[str]) -> None:
    require_chromium()  # the requests are recorded by the browser tests above
    assert requests_seen, "no request was recorded"
    outside = sorted({u for u in requests_seen if not is_local(u)})
    assert outside == []


def test_uploading_two_files_on_the_build_page_builds_a_knowledge_base(
    page, app_url: str, tmp_path: Path
) -> None:
    files = {
        "tls.md": "# TLS\n\nEvery service uses TLS 1.2 or later; certificates rotate yearly.\n",
        "审计.txt": "审计日志\n\n所有管理员操作都写入审计日志，日志保存一年，禁止记录密码。\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _open(page, app_url)
    page.locator(".st-key-create-name-0 input").fill("uploads")
    page.locator(".st-key-create-files-0 input[type=file]").set_input_files(
        [str(tmp_path / name) for name in files]
    )
    page.get_by_text("tls.md").first.wait_for()
    settle(page)
    page.locator(".st-key-create-submit button").click()
    page.get_by_text(re.compile(r"新增 2 篇")).first.wait_for(timeout=TIMEOUT_MS)
    settle(page)
    page.get_by_test_id("stSidebar").get_by_text(re.compile(r"uploads · 2 篇文档")).wait_for()
    page.get_by_text(re.compile(r"构建任务")).first.scroll_into_view_if_needed()
    _shot(page, "build")


def _graph_frame(page):
    """The frame that holds the pyvis network (st.iframe renders it from srcdoc)."""
    page.locator("iframe").first.wait_for()
    for _ in range(100):
        for frame in page.frames:
            try:
                if frame.evaluate("() => typeof network !== 'undefined'"):
                    return frame
            except Exception:  # noqa: BLE001 - a frame still loading
                pass
        page.wait_for_timeout(200)
    raise AssertionError("no frame with a vis network")


def test_the_graph_page_draws_the_network_and_shows_a_node(page, app_url: str) -> None:
    _open(page, app_url, "graph")
    frame = _graph_frame(page)
    frame.locator("canvas").first.wait_for()
    assert frame.evaluate("() => network.body.data.nodes.length") > 5
    assert frame.evaluate("() => Object.keys(network.body.nodes).length") > 5  # drawn
    _shot(page, "graph")
    names = frame.evaluate("() => network.body.data.nodes.get().map(n => n.label)")
    target = "bcrypt"  # named in both sample documents
    assert target in names
    search = page.locator(".st-key-graph-search input")
    search.fill(target)
    search.press("Enter")
    # The search selects its entity: its details replace those of the first node.
    page.get_by_role("heading", name=target).first.wait_for()
    settle(page)
    page.get_by_text(re.compile(r"^类型:")).first.wait_for()
    page.get_by_text(re.compile(r"\.md\)? · 第 \d+ (页|行)")).first.wait_for()
    assert page.get_by_text(re.compile(r"「.*」的 1 跳邻域")).first.is_visible()


def _cell(page, question: str, mode: str = "回答") -> None:
    """Type a question into the notebook's new cell, pick its mode and press Enter."""
    page.locator(".st-key-recall-mode").get_by_text(mode, exact=True).click()
    box = page.locator(".st-key-recall-query input")
    box.fill(question)
    box.press("Enter")
    # The page empties the box once it has taken the cell: on a busy machine the rerun can
    # start later than settle's first look, which would then read the page before the cell.
    page.wait_for_function(
        "() => document.querySelector('.st-key-recall-query input')?.value === ''",
        timeout=120_000,
    )
    settle(page)


def _questions(page) -> list[str]:
    """The notebook's questions, in order, as the page shows them ("1. question")."""
    heads = page.locator("[class*='st-key-cellhead-'] p").filter(has=page.locator("strong"))
    return [text.split(". ", 1)[1] for text in heads.all_inner_texts()]


def _tool(page, question: str, name: str):
    """The `name` button (run, edit, up, down, fold, delete) of the cell asking `question`."""
    head = page.locator("[class*='st-key-cellhead-']").filter(has_text=question).first
    key = next(c for c in head.get_attribute("class").split() if c.startswith("st-key-"))
    tool = "." + key.replace("cellhead", f"cell-{name}")
    # While a run ends Streamlit may still show the last run's copy of the cell: wait it out.
    page.wait_for_function(f"() => document.querySelectorAll('{tool}').length === 1")
    # A button with help text is drawn twice (one hidden, for its tooltip): the visible one.
    return page.locator(f"{tool} button:visible")


def _watch(page, *texts: str) -> None:
    """Record, in the page, the order in which each text first appears in a cell added after
    this call (a MutationObserver; cells already there may hold the same texts)."""
    page.evaluate(
        """(texts) => {
           const cells = () => [...document.querySelectorAll('[class*="st-key-cell-"]')]
             .filter(e => [...e.classList].some(c => /^st-key-cell-[0-9a-f]{32}$/.test(c)));
           const before = cells().length;
           window.zxSeen = []; const seen = new Set();
           new MutationObserver(() => {
             const added = cells().slice(before).map(e => e.innerText).join('\\n');
             for (const t of texts) {
               if (!seen.has(t) && added.includes(t)) { seen.add(t); window.zxSeen.push(t); } } })
           .observe(document.body, {childList: true, subtree: true, characterData: true}); }""",
        list(texts),
    )


def test_the_recall_notebook_keeps_edits_re_runs_deletes_and_exports_cells(
    page, app_url: str, tmp_path: Path
) -> None:
    _open(page, app_url, "recall")
    for question, mode in (
        ("密码存储", "检索"),
        ("会话超时应该设置多久？", "回答"),
        ("如何防止会话固定攻击？", "回答"),
    ):
        _cell(page, question, mode)
    page.get_by_text(re.compile(r"basic #\d")).first.wait_for()
    assert page.locator(".st-key-recall-query input").input_value() == ""  # ready for the next
    assert _questions(page) == ["密码存储", "会话超时应该设置多久？", "如何防止会话固定攻击？"]
    # The answer is the whole sentence, not a fragment (innerText: only what is shown).
    page.wait_for_function("() => document.body.innerText.includes('15 分钟')")
    # Edit the first cell and re-run it in place.
    _tool(page, "密码存储", "edit").click()
    settle(page)
    form = page.locator("[class*='st-key-cell-form-'] input[type=text]").first
    form.fill("密码如何存储？")
    form.press("Enter")
    settle(page)
    assert _questions(page)[0] == "密码如何存储？"
    _tool(page, "如何防止会话固定攻击？", "delete").click()
    settle(page)
    _open(page, app_url, "recall")  # a reload
    assert _questions(page) == ["密码如何存储？", "会话超时应该设置多久？"]
    _shot(page, "recall")
    with page.expect_download() as download:
        page.locator(".st-key-nb-export button").click()
    exported = tmp_path / "notebook.md"
    download.value.save_as(exported)
    text = exported.read_text(encoding="utf-8")
    assert "## 密码如何存储？" in text and "## 会话超时应该设置多久？" in text
    page.get_by_text("导入", exact=True).first.click()
    page.locator(".st-key-nb-import-file input[type=file]").set_input_files(str(exported))
    page.get_by_text("notebook.md").first.wait_for()
    settle(page)
    page.locator(".st-key-nb-import button").click()
    settle(page)
    page.get_by_text(re.compile("已导入 2 个单元")).first.wait_for()
    assert _questions(page) == ["密码如何存储？", "会话超时应该设置多久？"] * 2


def test_an_agentic_cell_shows_round_two_before_its_answer(page, app_url: str) -> None:
    _open(page, app_url, "recall")
    _watch(page, "第 2 轮", "引用（")
    _cell(page, "密码存储和文件上传有什么要求？", "多轮 Agentic")
    page.get_by_text(re.compile(r"第 2 轮")).first.wait_for()
    page.get_by_text("引用（", exact=False).first.wait_for()
    assert page.evaluate("() => window.zxSeen") == ["第 2 轮", "引用（"]
    _shot(page, "recall-agentic")


def test_the_agent_page_runs_the_showcase_audit_task(page, app_url: str) -> None:
    _open(page, app_url, "agent")
    box = page.locator(".st-key-agent-input textarea")
    box.fill("对这个 Java SpringBoot 项目进行代码审计，参考 @sample 中的规范")
    box.press("Enter")
    page.get_by_text(re.compile(r"子任务 1 · ")).first.wait_for()  # subtasks appear as they run
    # The report is the last Markdown that cites the planted SQL line (the subtasks' own
    # blocks cite it too, collapsed once they are done).
    report = page.get_by_test_id("stMarkdownContainer").filter(
        has_text=re.compile(r"ProductRepository\.java:52")
    )
    report.last.wait_for(timeout=TIMEOUT_MS)
    settle(page)
    assert page.get_by_text(re.compile("计划已根据知识库修订")).first.is_visible()
    page.get_by_role("heading", name=re.compile("^发现")).first.scroll_into_view_if_needed()
    _shot(page, "task")


class AgentModel:
    """The agentic roles for the browser test: round 1 misses an aspect, round 2 covers it."""

    ANSWER = "会话在登录后更换标识，空闲 15 分钟失效 [1]。"

    def __init__(self) -> None:
        self.verdicts = 0

    def __call__(self, body: dict) -> dict:
        from tests.fake_openai import _schema_of, default_responder

        name, _ = _schema_of(body)
        if name == "AgentPlan":
            return {
                "aspects": ["会话标识", "会话超时"],
                "queries": [{"query": "登录后更换会话标识"}, {"query": "空闲会话超时"}],
            }
        if name == "EvidenceVerdict":
            self.verdicts += 1
            if self.verdicts == 1:
                return {"sufficient": False, "missing": ["会话超时"], "covered": ["会话标识"]}
            return {"sufficient": True, "missing": [], "covered": ["会话标识", "会话超时"]}
        if name == "RefinedQueries":
            return {"queries": [{"query": "session idle timeout 15 minutes"}]}
        if name == "GroundedAnswer":
            return {"found": True, "answer": self.ANSWER, "cited": [1]}
        return default_responder(body)


def test_an_agentic_cell_with_a_model_renders_round_one_before_the_answer(
    page, llm_url: str, fake: FakeOpenAI
) -> None:
    fake.responder = AgentModel()
    _open(page, llm_url, "recall")
    page.locator(".st-key-recall-scope").get_by_text("@all 全部知识库").first.wait_for()
    page.locator(".st-key-recall-mode").get_by_text("多轮 Agentic", exact=True).click()
    box = page.locator(".st-key-recall-query input")
    box.fill("会话标识和会话超时有什么要求？")
    box.press("Enter")
    round_one = page.get_by_text(re.compile(r"第 1 轮")).first
    answer = page.get_by_text(re.compile("空闲 15 分钟失效")).first
    seen_round = seen_answer = None
    for tick in range(1200):  # 100 ms apart: what is on screen, while the run goes on
        if seen_round is None and round_one.is_visible():
            seen_round = tick
        if seen_answer is None and answer.is_visible():
            seen_answer = tick
            break
        page.wait_for_timeout(100)
    assert seen_round is not None and seen_answer is not None, (seen_round, seen_answer)
    assert seen_round < seen_answer  # the round rendered while the loop was still running
    settle(page)
    page.get_by_text(re.compile(r"第 2 轮")).first.wait_for()
    citation = page.get_by_test_id("stExpander").filter(has_text=re.compile(r"\[1\] .+\.md"))
    citation.first.locator("summary").click()
    details = citation.first.get_by_test_id("stExpanderDetails")
    details.wait_for()  # the cited chunk, revealed by the click
    assert len(details.inner_text().strip()) > 20
    _shot(page, "recall-agentic-llm")


def test_the_api_key_never_reaches_the_browser(page, llm_url: str) -> None:
    _open(page, llm_url, "settings")
    assert "sk-browser-test" not in page.content()
    _shot(page, "settings")


def test_still_nothing_from_outside_localhost(requests_seen: list[str]) -> None:
    outside = sorted({u for u in requests_seen if not is_local(u)})
    assert outside == []


# --- hostile input (docs/architecture.md §10): names and text from documents render as text, never as markup ---

XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_SCRIPT = "</script><script>alert(2)</script>"
XSS_FILE = "<img src=x onerror=alert(3)>.md"
BEACON = "http://beacon.invalid/pixel.png"  # a Markdown image in a document must not be fetched
XSS_DOC = (
    f"# 漏洞说明 {XSS_IMG}\n\n"
    f"跨站脚本 XSS 的示例载荷是 {XSS_IMG} 和 {XSS_SCRIPT}，页面必须把它们当作文本显示。\n\n"
    f"![beacon]({BEACON}) 图片也不能加载。\n"
)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, embedder) -> Iterator[tuple[str, dict[str, int]]]:
    """The app, offline, on a home whose document name, text and entities are hostile."""
    from zhixing.core.config import Settings
    from zhixing.core.extract import normalize_entity_name
    from zhixing.core.service import KnowledgeService

    require_chromium()
    root = tmp_path_factory.mktemp("hostile")
    home = root / "home"
    (root / "docs").mkdir()
    (root / "docs" / XSS_FILE).write_text(XSS_DOC, encoding="utf-8")
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        kb = svc.kbs.create("evil", mode="graph")
        report = svc.builds.add("evil", [root / "docs" / XSS_FILE])
        assert report.added == [XSS_FILE], report.to_json()
        chunk = svc._home.catalog.db.execute(
            "SELECT id FROM chunks WHERE kb_id = ?", [kb.id]
        ).fetchone()
        graph, ids = svc._home.graph, {}
        for name, kind in ((XSS_IMG, "weakness"), (XSS_SCRIPT, XSS_SCRIPT)):
            key = normalize_entity_name(name)
            ids[name] = graph.create_entity(kb.id, key=key, type_=kind, name=name, attributes={})
            graph.mention_entity(ids[name], chunk[0], name, f"描述 {XSS_SCRIPT} {XSS_IMG}", {})
        rel = graph.relate(kb.id, ids[XSS_IMG], ids[XSS_SCRIPT], XSS_IMG, chunk[0], XSS_SCRIPT)
        graph.refresh(ids.values(), [rel])
    with serve_app(home) as url:
        yield url, ids


@pytest.fixture
def watched(page):
    """The page, with every JavaScript dialog (alert, confirm, prompt) recorded and dismissed."""
    dialogs: list[str] = []
    requests: list[str] = []

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("request", lambda request: requests.append(request.url))
    yield page, dialogs, requests
    assert dialogs == [], f"a JavaScript dialog opened: {dialogs}"
    assert not [u for u in requests if "beacon" in u or u.rstrip("/").endswith("/x")]


def _no_injected_markup(page) -> None:
    for frame in page.frames:
        assert frame.locator('img[src="x"]').count() == 0


def test_hostile_names_render_as_text_on_the_build_page(watched, hostile) -> None:
    page, dialogs, _ = watched
    url, _ = hostile
    _open(page, url)
    page.get_by_text(re.compile(r"「evil」")).first.wait_for()  # the documents panel
    picker = page.locator(".st-key-remove-evil input")  # the document list's remove picker
    picker.wait_for()
    assert picker.input_value() == XSS_FILE
    _no_injected_markup(page)


def test_hostile_text_renders_as_text_in_recall_hits_and_summary(watched, hostile) -> None:
    page, dialogs, _ = watched
    url, _ = hostile
    _open(page, url, "recall")
    _cell(page, "跨站脚本 XSS 载荷")
    hit = page.get_by_test_id("stExpander").filter(has_text=XSS_FILE).first
    hit.wait_for()
    hit.locator("summary").click()
    hit.get_by_text(XSS_SCRIPT, exact=False).first.wait_for()
    assert XSS_IMG in hit.inner_text()
    _no_injected_markup(page)


def test_hostile_entities_render_as_text_on_the_graph_page(watched, hostile) -> None:
    page, dialogs, _ = watched
    url, ids = hostile
    _open(page, url, "graph")
    frame = _graph_frame(page)
    labels = frame.evaluate("() => network.body.data.nodes.get().map(n => n.label)")
    assert {XSS_IMG, XSS_SCRIPT} <= set(labels)  # beside what the offline extractor found
    legend = frame.locator(".zx-legend").inner_text()
    assert XSS_SCRIPT in legend
    # Hover the node: vis-network's tooltip shows the title as text.
    page.wait_for_timeout(1000)
    # Hold the layout still (a loaded machine may not have settled it), then aim at the node.
    frame.evaluate(
        "() => { network.stopSimulation(); network.setOptions({physics: false});"
        " network.fit({animation: false}); }"
    )
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    holder = frame.frame_element()  # the nested frame that draws the network

    def aim() -> tuple[float, float]:
        """The node's place on the screen now: the frame scrolled into view first (a node low
        in it may lie below the window's edge), then the frame's box and the node's place in it
        (a busy page may still move either)."""
        holder.scroll_into_view_if_needed()
        box = holder.bounding_box()
        assert box is not None
        x, y = frame.evaluate(
            """(id) => { const p = network.canvasToDOM(network.getPositions([id])[id]);
                         const r = document.getElementById('mynetwork').getBoundingClientRect();
                         return [p.x + r.left, p.y + r.top]; }""",
            ids[XSS_IMG],
        )
        return box["x"] + x, box["y"] + y

    tooltip = frame.locator("div.vis-tooltip")
    for nudge in range(6):  # a hand moves onto a node; one move may land while the page is busy
        x, y = aim()
        assert 0 <= x < 1400 and 0 <= y < 1000, (x, y)  # inside the window
        page.mouse.move(x - 40, y - 40)
        page.mouse.move(x + nudge % 3, y, steps=4)
        try:
            tooltip.wait_for(state="visible", timeout=4_000)
            break
        except PlaywrightTimeout:
            continue
    tooltip.wait_for(state="visible", timeout=5_000)
    assert XSS_IMG in tooltip.inner_text() and XSS_SCRIPT in tooltip.inner_text()
    assert tooltip.locator("img, script").count() == 0
    page.mouse.click(x, y)
    # Searching the entity shows its details as text.
    search = page.locator(".st-key-graph-search input")
    search.fill(XSS_IMG)
    search.press("Enter")
    settle(page)
    page.get_by_role("heading", name=XSS_IMG).first.wait_for()
    page.get_by_text(re.compile(re.escape(f"描述 {XSS_SCRIPT}"))).first.wait_for()
    chunk = page.get_by_test_id("stExpander").filter(has_text=XSS_FILE).first
    # The graph runs in a sandboxed frame of its own process: after the synthetic click in it,
    # Chromium routes the next jump-and-click to the old target. A hand always moves first.
    chunk.locator("summary").hover()
    page.wait_for_timeout(300)
    chunk.locator("summary").click()
    chunk.get_by_text(re.compile(re.escape(XSS_SCRIPT))).first.wait_for()
    assert "![beacon]" in chunk.inner_text()  # the image stayed text
    _no_injected_markup(page)


def test_hostile_text_renders_as_text_in_agentic_cells_rounds_and_citations(
    watched, hostile
) -> None:
    page, dialogs, _ = watched
    url, _ = hostile
    _open(page, url, "recall")
    _cell(page, f"跨站脚本 XSS 载荷 {XSS_IMG} 是什么？", "多轮 Agentic")
    page.get_by_text(re.compile(r"第 1 轮")).first.wait_for()
    settle(page)
    question = page.locator("[class*='st-key-cellhead-']").last
    assert XSS_IMG in question.inner_text()  # the asked question, shown as typed
    citation = page.get_by_test_id("stExpander").filter(has_text=XSS_FILE)
    citation.first.wait_for()
    citation.first.locator("summary").click()
    citation.first.get_by_text(re.compile(re.escape(XSS_SCRIPT))).first.wait_for()
    _no_injected_markup(page)


# --- the login gate of a shared server -----------------------------------------------------


@pytest.fixture(scope="module")
def gated(tmp_path_factory, embedder) -> Iterator[str]:
    """The app as `zhixing serve` starts it off localhost: logins required, two users."""
    from zhixing.core.config import Settings
    from zhixing.core.service import KnowledgeService

    require_chromium()
    home = tmp_path_factory.mktemp("gated") / "home"
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        svc.users.add("ada", "admin", "ada-password")
        svc.users.add("vera", "viewer", "vera-password")
        svc.kbs.create("policies")
    with serve_app(home, {"ZHIXING_AUTH": "required"}) as url:
        yield url


def _sign_in(page, url: str, name: str, password: str) -> None:
    page.goto(url)
    page.get_by_label("用户名", exact=True).fill(name)
    page.get_by_label("密码", exact=True).fill(password)
    page.get_by_role("button", name="登录", exact=True).click()
    settle(page)


def test_a_shared_server_asks_everyone_to_sign_in_and_gives_each_role_its_pages(
    page, gated: str
) -> None:
    page.goto(gated)
    page.get_by_label("用户名", exact=True).wait_for()
    assert "policies" not in page.content()  # nothing of the knowledge before signing in
    _shot(page, "login")
    _sign_in(page, gated, "vera", "wrong-password")
    page.get_by_text("Wrong user name or password.").wait_for()
    _sign_in(page, gated, "vera", "vera-password")
    page.get_by_role("heading", name="构建").wait_for()
    page.get_by_text("已登录：vera（viewer）").wait_for()
    assert page.get_by_text("快捷创建知识库").count() == 0
    assert page.get_by_role("link", name="设置").count() == 0
    page.get_by_role("button", name="退出登录", exact=True).click()
    page.get_by_label("用户名", exact=True).wait_for()
    _sign_in(page, gated, "ada", "ada-password")
    page.get_by_role("link", name="设置").wait_for()
    page.get_by_text("快捷创建知识库").wait_for()
