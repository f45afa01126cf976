"""The `zhixing` command against a temp home: in this process through `main(argv)`
(tests/command.py), and once end to end as a real process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.command import zhixing_process, zx
from tests.conftest import shared
from zhixing.core.search import STRATEGIES


def zx_process(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`zhixing ARGS` as a real process, for the end-to-end test."""
    offline = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
    return zhixing_process(home, *args, env=offline, timeout=300)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "xss.md").write_text(
        "# 跨站脚本\n\n输出到 HTML 页面的数据必须进行上下文相关的编码，以防止跨站脚本（XSS）攻击。\n",
        encoding="utf-8",
    )
    (folder / "csrf.txt").write_text(
        "Cross-site request forgery is prevented with synchronizer tokens and SameSite cookies.\n",
        encoding="utf-8",
    )
    return folder


@pytest.mark.process
def test_a_real_process_creates_lists_and_refuses_as_this_process_does(home):
    """End to end: the installed entry point's module, its exit codes and its output, and
    tests/command.py's stand-in for it says the same (same output, same exit status)."""
    create = ["kb", "create", "规范", "--mode", "graph", "--tags", "java,安全"]
    create += ["--description", "编码规范"]
    for args in (create, create, ["kb", "list", "--json"]):  # the second is refused
        here, there = zx(home / "here", *args, check=False), zx_process(home, *args)
        assert (here.returncode, here.stdout, here.stderr) == (
            there.returncode,
            there.stdout,
            there.stderr,
        )
    assert there.returncode == 0 and json.loads(there.stdout) == [
        {
            "name": "规范",
            "mode": "graph",
            "tags": ["java", "安全"],
            "description": "编码规范",
            "documents": 0,
            "chunks": 0,
        }
    ]
    assert here.returncode == 0 and "already exists" in zx(home, *create, check=False).stderr
    zx(home, "kb", "delete", "规范")
    assert json.loads(zx(home, "kb", "list", "--json").stdout) == []


def test_errors_are_one_sentence_on_stderr_with_a_non_zero_exit(home):
    zx(home, "kb", "create", "a")
    dup = zx(home, "kb", "create", "a", check=False)
    assert (
        dup.returncode == 1
        and dup.stderr.strip() == "zhixing: A knowledge base named 'a' already exists."
    )
    missing = zx(home, "docs", "nope", check=False)
    assert missing.returncode == 1 and "no knowledge base named 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = zx(home, "search", "a", "x", "--strategies", "basic,magic", check=False)
    assert bad.returncode == 1 and "valid strategies: basic, hyde" in bad.stderr


def test_add_docs_search_and_remove(home, notes):
    zx(home, "kb", "create", "web")
    added = zx(home, "add", "web", str(notes), "--json")
    summary = json.loads(added.stdout)
    assert summary["added"] == 2 and summary["failed"] == [] and summary["chunks"] >= 2
    assert "documents" in added.stderr  # the progress bar

    docs = json.loads(zx(home, "docs", "web", "--json").stdout)
    assert [d["document"] for d in docs] == ["csrf.txt", "xss.md"]
    assert all(d["status"] == "indexed" and d["error"] == "" for d in docs)

    out = json.loads(zx(home, "search", "web", "XSS 编码", "--json", "--top-k", "2").stdout)
    assert out["query"] == "XSS 编码"
    top = out["hits"][0]
    assert set(top) == {
        "rank",
        "score",
        "chunk_id",
        "knowledge_base",
        "document",
        "title",
        "page",
        "line_start",
        "line_end",
        "ocr",
        "heading_path",
        "text",
        "strategies",
    }
    assert top["knowledge_base"] == "web"
    assert top["rank"] == 1 and top["document"] == "xss.md" and top["page"] == 1
    assert top["ocr"] is False  # a Markdown file's text is its own
    assert {"basic", "keyword"} <= set(top["strategies"]) <= set(STRATEGIES)

    all_kbs = json.loads(zx(home, "search", "--all", "SameSite cookies", "--json").stdout)
    assert all_kbs["hits"][0]["document"] == "csrf.txt"

    zx(home, "remove", "web", "xss.md")
    docs = json.loads(zx(home, "docs", "web", "--json").stdout)
    assert [d["document"] for d in docs] == ["csrf.txt"]


def test_search_all_json_names_each_hits_knowledge_base(home, notes):
    zx(home, "kb", "create", "web")
    zx(home, "kb", "create", "页面")
    zx(home, "add", "web", str(notes / "csrf.txt"))
    zx(home, "add", "页面", str(notes / "xss.md"))
    query = ["search", "--all", "跨站脚本 XSS SameSite cookies", "--json", "--top-k", "10"]
    hits = json.loads(zx(home, *query).stdout)["hits"]
    found = {(h["document"], h["knowledge_base"]) for h in hits}
    assert found == {("csrf.txt", "web"), ("xss.md", "页面")}


def test_batch_search_prints_one_line_per_query(home, notes, tmp_path):
    zx(home, "kb", "create", "web")
    zx(home, "add", "web", str(notes))
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"id": "q1", "question": "如何防止跨站脚本"}\n'
        '{"id": "q2", "question": "synchronizer tokens"}\n'
        "not json\n"
        '{"id": "q4", "question": "SameSite"}\n',
        encoding="utf-8",
    )
    result = zx(
        home, "search", "web", "--queries", str(queries), "--json", "--top-k", "1", check=False
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["q1", "q2", None, "q4"]
    assert lines[0]["hits"][0]["document"] == "xss.md"
    assert lines[1]["hits"][0]["document"] == "csrf.txt"
    assert lines[2]["hits"] == [] and "line 3" in lines[2]["error"]
    assert result.returncode == 1 and "line 3 of q.jsonl" in result.stderr


def test_bad_inputs_fail_one_by_one_and_the_rest_goes_in(home, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "empty.txt").write_bytes(b"")
    (bad / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    (bad / "gbk.txt").write_bytes("国家标准：源代码中禁止硬编码口令。".encode("gbk"))
    (bad / "empty.jsonl").write_bytes(b"")
    (bad / "corpus.jsonl").write_text(
        '{"id": "r1", "title": "One", "text": "first record about firewalls"}\n'
        '{"id": "r2", "title": "Two", "text": \n'
        '{"id": "r3", "title": "Three", "text": "third record about routers"}\n',
        encoding="utf-8",
    )
    # Hidden files in a folder are skipped, so this one is named on the command line.
    evil = tmp_path / "..\\..\\evil.md"
    evil.write_text("# Evil\n\nA harmless note.\n", encoding="utf-8")
    (bad / "中文 笔记.md").write_text("# 笔记\n\n内容\n", encoding="utf-8")
    zx(home, "kb", "create", "mixed")
    result = zx(home, "add", "mixed", str(bad), str(evil), "--json", check=False)
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    errors = {f["document"]: f["error"] for f in summary["failed"]}
    assert set(errors) == {"empty.txt", "image.txt", "empty.jsonl", "corpus.jsonl"}
    assert "empty" in errors["empty.txt"] and "empty" in errors["empty.jsonl"]
    assert "line 2" in errors["corpus.jsonl"]
    failed_lines = [ln for ln in result.stderr.splitlines() if ln.startswith("failed: ")]
    assert len(failed_lines) == 4
    docs = {d["document"]: d for d in json.loads(zx(home, "docs", "mixed", "--json").stdout)}
    assert docs["gbk.txt"]["status"] == "indexed"
    assert {"r1", "r3", "evil.md", "中文 笔记.md"} <= set(docs)
    assert not any("/" in name or ".." in name for name in docs)
    hit = json.loads(zx(home, "search", "mixed", "硬编码口令", "--json").stdout)["hits"][0]
    assert hit["document"] == "gbk.txt" and "硬编码" in hit["text"]


@pytest.mark.shared_data
@pytest.mark.slow
def test_broken_pdfs_each_get_a_clear_error(home):
    pdfs = shared("pdfs")
    names = [
        "password-example.pdf",
        "malformed-from-issue-932.pdf",
        "issue-297-example.pdf",
    ]  # issue-203-decimalize.pdf, a scan, is read by OCR now (tests/test_ingest_pdf.py)
    zx(home, "kb", "create", "pdfs")
    result = zx(home, "add", "pdfs", *[str(pdfs / n) for n in names], "--json", check=False)
    assert result.returncode == 1
    errors = {f["document"]: f["error"] for f in json.loads(result.stdout)["failed"]}
    # The malformed file's damage is recoverable: its one line of text goes in.
    assert set(errors) == set(names) - {"malformed-from-issue-932.pdf"}
    docs = {d["document"]: d for d in json.loads(zx(home, "docs", "pdfs", "--json").stdout)}
    assert docs["malformed-from-issue-932.pdf"]["status"] == "indexed"
    assert "encrypted" in errors["password-example.pdf"]
    assert "pages" in errors["issue-297-example.pdf"] or "empty" in errors["issue-297-example.pdf"]
    assert "Traceback" not in result.stderr
    assert all(e.count(". ") <= 1 for e in errors.values())  # one sentence each


def test_graph_command_shows_statistics_and_a_neighbourhood(home, tmp_path):
    doc = tmp_path / "inj.md"
    doc.write_text(
        "# 注入\n\nSQL注入属于注入攻击。参数化查询可以防止SQL注入。\n"
        "Parameterized queries prevent SQL injection.\n",
        encoding="utf-8",
    )
    zx(home, "kb", "create", "g", "--mode", "graph")
    zx(home, "add", "g", str(doc))
    stats = json.loads(zx(home, "graph", "g", "--json").stdout)
    assert set(stats) == {"entities", "relations", "types"}
    assert stats["entities"] >= 3 and stats["relations"] >= 1
    view = json.loads(zx(home, "graph", "g", "--entity", "SQL注入", "--hops", "1", "--json").stdout)
    assert set(view) == {"nodes", "edges"}
    assert set(view["nodes"][0]) == {"id", "name", "type", "description", "aliases", "chunks"}
    assert set(view["edges"][0]) == {"source", "target", "type", "weight"}
    ids = {n["id"] for n in view["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in view["edges"])
    text = zx(home, "graph", "g", "--entity", "sql injection").stdout
    assert "SQL" in text and "->" in text
    missing = zx(home, "graph", "g", "--entity", "nothing-like-this", check=False)
    assert missing.returncode == 1 and "no entity named" in missing.stderr


def test_search_summary_and_ask_answer_with_citations_or_say_not_found(home, notes):
    zx(home, "kb", "create", "web")
    zx(home, "add", "web", str(notes))
    out = json.loads(zx(home, "search", "web", "SameSite cookies", "--summary", "--json").stdout)
    assert out["summary"]["found"] is True
    cited = {c["chunk_id"] for c in out["summary"]["citations"]}
    assert cited and cited <= {h["chunk_id"] for h in out["hits"]}

    asked = zx(home, "ask", "web", "How is cross-site request forgery prevented?", "--json")
    result = json.loads(asked.stdout)
    assert set(result) == {"answer", "found", "citations", "method", "note", "rounds"}
    assert result["found"] is True and result["citations"][0]["document"] == "csrf.txt"
    assert set(result["rounds"][0]) == {
        "round",
        "queries",
        "hits_by_strategy",
        "new_evidence",
        "sufficient",
        "missing",
    }
    assert "[round 1] retrieve" in asked.stderr  # the rounds are printed live

    none = json.loads(zx(home, "ask", "web", "量子计算机的散热方案是什么？", "--json").stdout)
    assert none["found"] is False and none["answer"] == "未在知识库中找到相关信息"
    none = json.loads(
        zx(home, "ask", "web", "What is the boiling point of tungsten?", "--json").stdout
    )
    assert none["answer"] == "No relevant information was found in the knowledge base."
