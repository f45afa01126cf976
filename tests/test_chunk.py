"""chunk_document: structure-aware chunks with heading paths, pages, lines and bounded sizes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zhixing.core.ingest import chunk_document, parse_file
from zhixing.core.ingest.chunk import count_units, split_sentences
from zhixing.core.models import Chunk, Page, ParsedDocument

SHARED = Path(__file__).parents[1].parent / "shared" / "data"


def doc(text: str, kind: str = "markdown", pages: list[str] | None = None) -> ParsedDocument:
    texts = pages if pages is not None else [text]
    return ParsedDocument("d", kind, "t", tuple(Page(i + 1, t) for i, t in enumerate(texts)))


def body_lines(document: ParsedDocument, chunk: Chunk) -> list[str]:
    lines = "\n".join(p.text for p in document.pages).split("\n")
    return lines[chunk.line_start - 1 : chunk.line_end]


def cjk_paragraph(count: int, start: int = 0) -> str:
    return "".join(f"这是第{i}句话，用来测试分块。" for i in range(start, start + count))


def test_units_count_cjk_characters_once_and_latin_words_twice() -> None:
    assert count_units("口令策略") == 4
    assert count_units("use strong passwords") == 6
    assert count_units("启用 MFA 认证") == 6
    assert count_units("| --- | :: |") == 0


def test_cjk_sentences_split_after_their_end_marks() -> None:
    text = "第一句。第二句！第三句？第四句；第五句"
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "第一句。", "第二句！", "第三句？", "第四句；", "第五句",
    ]  # fmt: skip


def test_latin_sentences_split_only_before_whitespace() -> None:
    text = "Version 3.14 is out. Use it! Really? Yes"
    assert [text[a:b].strip() for a, b in split_sentences(text)] == [
        "Version 3.14 is out.", "Use it!", "Really?", "Yes",
    ]  # fmt: skip


def test_markdown_headings_give_nested_heading_paths() -> None:
    text = (
        "# Guide\n\nIntro words for the guide go here and there.\n\n## Passwords\n\n"
        + "Use long passphrases. " * 30 + "\n\n### Storage\n\n" + "Hash them with argon2. " * 30
        + "\n\n## Sessions\n\n" + "Rotate session ids on login. " * 30
    )  # fmt: skip
    paths = [c.heading_path for c in chunk_document(doc(text), max_units=200)]
    assert paths[0] == ("Guide",)
    assert ("Guide", "Passwords") in paths
    assert ("Guide", "Passwords", "Storage") in paths
    assert paths[-1] == ("Guide", "Sessions")


@pytest.mark.parametrize(
    ("heading", "path"),
    [
        ("6.2.3.4 身份鉴别", ("6 安全要求", "6.2.3.4 身份鉴别")),
        ("V5.3 输出编码", ("6 安全要求", "V5.3 输出编码")),
        ("第三章 总则", ("第三章 总则",)),
        ("附录A 术语", ("附录A 术语",)),
    ],
)
def test_numbered_clauses_and_chapters_are_headings_in_plain_text(
    heading: str, path: tuple[str, ...]
) -> None:
    text = f"6 安全要求\n\n{cjk_paragraph(8)}\n\n{heading}\n\n{cjk_paragraph(8, 8)}"
    chunks = chunk_document(doc(text, kind="pdf"), max_units=150, overlap_units=0)
    last = chunks[-1]
    assert last.heading_path == path
    assert last.text.startswith(heading)


def test_an_article_keeps_its_text_and_is_its_own_heading() -> None:
    text = "第一章 总则\n" + "\n".join(
        f"第{n}条 {cjk_paragraph(6, i * 10)}" for i, n in enumerate("一二三")
    )
    chunks = chunk_document(doc(text, kind="text"), max_units=100, overlap_units=0)
    assert [c.heading_path for c in chunks] == [
        ("第一章 总则", "第一条"), ("第一章 总则", "第二条"), ("第一章 总则", "第三条"),
    ]  # fmt: skip
    assert chunks[1].text.startswith("第二条 这是第10句话")


def test_a_hash_line_inside_a_code_fence_is_not_a_heading() -> None:
    text = "# Setup\n\n```bash\n# install it\npip install x\n```\n\nDone."
    (chunk,) = chunk_document(doc(text))
    assert chunk.heading_path == ("Setup",)
    assert "# install it" in chunk.text


def test_contents_lines_with_leaders_are_not_headings() -> None:
    text = "V1 架构..........17\nV2 认证..........23\n" + cjk_paragraph(3)
    assert chunk_document(doc(text, kind="pdf"))[0].heading_path == ()


def test_page_and_line_numbers_point_at_the_chunk_text() -> None:
    pages = [
        "第一章 总则\n" + cjk_paragraph(20),
        cjk_paragraph(5, 20) + "\n\n第二章 范围\n" + cjk_paragraph(20, 30),
        "第三章 术语\n" + cjk_paragraph(3, 60),
    ]
    document = doc("", kind="pdf", pages=pages)
    chunks = chunk_document(document, max_units=120, overlap_units=0)
    for chunk in chunks:
        lines = body_lines(document, chunk)
        # A chunk may start or end mid-line (at a sentence), never outside its lines.
        assert chunk.text.split("\n")[0] in lines[0]
        assert chunk.text.split("\n")[-1] in lines[-1]
    first_of = {c.heading_path[0]: c for c in reversed(chunks) if c.heading_path}
    assert (first_of["第一章 总则"].page_start, first_of["第一章 总则"].line_start) == (1, 1)
    assert (first_of["第二章 范围"].page_start, first_of["第二章 范围"].line_start) == (2, 5)
    assert (first_of["第三章 术语"].page_start, first_of["第三章 术语"].line_start) == (3, 7)
    assert chunks[-1].page_end == 3 and chunks[-1].line_end == 8
    spanning = [c for c in chunks if c.page_start != c.page_end]
    assert spanning and all(c.page_start < c.page_end for c in spanning)


def test_sizes_stay_within_max_units_for_chinese_and_english() -> None:
    english = " ".join(f"Sentence number {i} talks about access control." for i in range(300))
    text = f"# 中文\n\n{cjk_paragraph(200)}\n\n# English\n\n{english}"
    chunks = chunk_document(doc(text), max_units=300, overlap_units=40)
    assert len(chunks) > 10
    assert all(count_units(c.text) <= 300 for c in chunks)


def test_a_long_run_without_punctuation_is_hard_cut_within_the_limit() -> None:
    text = "口令" * 1000 + "\n\n" + " ".join(["token"] * 500)
    chunks = chunk_document(doc(text, kind="text"), max_units=100, overlap_units=10)
    assert all(0 < count_units(c.text) <= 100 for c in chunks)
    assert "".join(c.text for c in chunks if "口令" in c.text) == "口令" * 1000


def test_consecutive_chunks_of_a_section_share_a_trailing_sentence() -> None:
    text = "# 口令\n\n" + cjk_paragraph(40)
    chunks = chunk_document(doc(text), max_units=150, overlap_units=30)
    assert len(chunks) >= 3
    for before, after in zip(chunks, chunks[1:], strict=False):
        shared = split_sentences(after.text)[0]
        first = after.text[shared[0] : shared[1]]
        assert before.text.endswith(first)
        assert count_units(first) <= 30


def test_no_overlap_crosses_into_another_section() -> None:
    text = "# A\n\n" + cjk_paragraph(20) + "\n\n# B\n\n" + cjk_paragraph(20, 100)
    chunks = chunk_document(doc(text), max_units=400, overlap_units=50)
    assert [c.heading_path for c in chunks] == [("A",), ("B",)]
    assert chunks[1].text.startswith("# B")


def test_overlap_can_be_turned_off() -> None:
    chunks = chunk_document(doc(cjk_paragraph(40), kind="text"), max_units=150, overlap_units=0)
    assert "".join(c.text for c in chunks) == cjk_paragraph(40)


def table(rows: int) -> str:
    lines = ["| 编号 | 要求 |", "|---|---|"]
    return "\n".join(lines + [f"| {i}.1 | 验证第{i}项控制措施已经实施。 |" for i in range(rows)])


def test_tables_are_never_split_mid_row_and_repeat_their_header() -> None:
    text = "# 要求\n\n" + table(60)
    chunks = chunk_document(doc(text), max_units=200, overlap_units=40)
    assert len(chunks) > 3
    for chunk in chunks:
        table_lines = [ln for ln in chunk.text.split("\n") if ln.startswith("|")]
        assert table_lines[:2] == ["| 编号 | 要求 |", "|---|---|"]
        assert all(re.fullmatch(r"\| .* \| .* \||\|---\|---\|", ln) for ln in table_lines)
        assert count_units(chunk.text) <= 200
    rows = [ln for c in chunks for ln in c.text.split("\n") if ln.startswith("| ") and "." in ln]
    assert len(rows) == 60  # every row once: no overlap inside tables


def test_a_small_table_stays_whole_in_one_chunk() -> None:
    text = "# 要求\n\n说明文字。\n\n" + table(5) + "\n\n表后文字。"
    (chunk,) = chunk_document(doc(text))
    assert table(5) in chunk.text


def test_tiny_sibling_sections_merge_but_keep_their_headings_in_the_text() -> None:
    text = (
        "# 第一章\n\n## 1.1 目的\n\n简短。\n\n## 1.2 范围\n\n也很短。\n\n"
        "# 第二章\n\n## 2.1 术语\n\n" + cjk_paragraph(10)
    )
    chunks = chunk_document(doc(text), max_units=200, overlap_units=0)
    assert [c.heading_path for c in chunks] == [("第一章",), ("第二章", "2.1 术语")]
    assert "## 1.1 目的" in chunks[0].text and "## 1.2 范围" in chunks[0].text
    assert chunks[1].text.startswith("# 第二章\n\n## 2.1 术语")


def test_ordinals_run_from_zero_and_chunking_is_deterministic() -> None:
    text = "# A\n\n" + cjk_paragraph(50) + "\n\n# B\n\n" + table(30)
    first = chunk_document(doc(text), max_units=120)
    assert [c.ordinal for c in first] == list(range(len(first)))
    assert chunk_document(doc(text), max_units=120) == first


def test_every_line_of_the_document_lands_in_some_chunk() -> None:
    text = "# A\n\n" + cjk_paragraph(50) + "\n\n## B\n\n" + table(30) + "\n\nend."
    chunks = chunk_document(doc(text), max_units=120, overlap_units=20)
    covered = {n for c in chunks for n in range(c.line_start, c.line_end + 1)}
    lines = text.split("\n")
    assert {i + 1 for i, line in enumerate(lines) if line.strip()} <= covered


def test_an_empty_document_has_no_chunks() -> None:
    assert chunk_document(doc("\n\n   \n")) == []
    assert chunk_document(ParsedDocument("d", "pdf", "t", ())) == []


@pytest.mark.parametrize(("max_units", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_nonsense_sizes_are_rejected(max_units: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        chunk_document(doc("x"), max_units=max_units, overlap_units=overlap)


@pytest.mark.shared_data
def test_asvs_pdf_chunks_keep_every_requirement_row_whole_under_its_section() -> None:
    path = SHARED / "docs" / "asvs-4.0.3" / "OWASP_ASVS_4.0.3-zh-cn.pdf"
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/data holds the real test documents)")
    document = parse_file(path)
    chunks = chunk_document(document)
    assert all(count_units(c.text) <= 800 for c in chunks)
    rows = {}
    for chunk in chunks:
        for line in chunk.text.split("\n"):
            if found := re.match(r"^\| (\d+)\.(\d+)\.(\d+) \|", line):
                rows[found.group(0)] = chunk
                chapter = f"V{found.group(1)}"
                assert any(h.split(" ")[0].lstrip("#") == chapter for h in chunk.heading_path)
    assert len(rows) >= 280


@pytest.mark.shared_data
def test_owasp_cheat_sheets_chunk_quickly_within_bounds() -> None:
    folder = SHARED / "docs" / "owasp-cheatsheets"
    if not folder.exists():
        pytest.skip(f"{folder} is not available (../shared/data holds the real test documents)")
    files = sorted(folder.glob("*.md"))[:40]
    for path in files:
        chunks = chunk_document(parse_file(path))
        assert chunks and all(count_units(c.text) <= 800 for c in chunks)
        assert chunks[0].heading_path[:1] == (parse_file(path).title,) or not chunks[0].heading_path


def test_a_table_header_is_not_left_alone_at_the_end_of_a_chunk() -> None:
    text = "# 要求\n\n" + cjk_paragraph(12) + "\n\n" + table(20)
    chunks = chunk_document(doc(text), max_units=200, overlap_units=0)
    for chunk in chunks:
        assert not chunk.text.rstrip().endswith("|---|---|")
