"""iter_jsonl: one document per corpus line, a bad line reported by number, the rest read on."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from zhixing.core.errors import ParseError
from zhixing.core.ingest import iter_jsonl
from zhixing.core.models import Page, ParsedDocument

SHARED = Path(__file__).parents[1].parent / "shared" / "data"


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_each_line_becomes_one_document_named_by_its_id(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "corpus.jsonl",
        [
            json.dumps({"id": "d1", "title": "First", "text": "alpha\r\nbeta"}),
            json.dumps({"id": 42, "title": "数字编号", "text": "中文正文"}, ensure_ascii=False),
        ],
    )
    assert list(iter_jsonl(path)) == [
        (1, ParsedDocument("d1", "jsonl", "First", (Page(1, "alpha\nbeta"),))),
        (2, ParsedDocument("42", "jsonl", "数字编号", (Page(1, "中文正文"),))),
    ]


def test_a_broken_line_is_reported_by_number_and_the_others_still_come_out(
    tmp_path: Path,
) -> None:
    path = write_lines(
        tmp_path / "corpus.jsonl",
        [
            json.dumps({"id": 1, "title": "a", "text": "one"}),
            '{"id": 2, "title": "b", "text": "tw',
            json.dumps({"id": 3, "title": "c", "text": "three"}),
        ],
    )
    results = list(iter_jsonl(path))
    assert [number for number, _ in results] == [1, 2, 3]
    assert [r.source for _, r in results if isinstance(r, ParsedDocument)] == ["1", "3"]
    error = results[1][1]
    assert isinstance(error, ParseError)
    assert str(error).startswith("line 2 of corpus.jsonl: not valid JSON (")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": 7, "title": "t"}', 'line 1 of c.jsonl: missing "text".'),
        ('{"id": 7, "text": "   "}', "line 1 of c.jsonl: empty text."),
        ('{"id": 7, "text": 12}', 'line 1 of c.jsonl: "text" must be a string.'),
        ('{"title": "t", "text": "x"}', 'line 1 of c.jsonl: missing "id".'),
        ("[1, 2]", 'line 1 of c.jsonl: expected an object like {"id", "title", "text"}.'),
    ],
)
def test_a_record_without_usable_text_or_id_is_an_error_for_that_line(
    tmp_path: Path, line: str, message: str
) -> None:
    (_, error), *_ = iter_jsonl(write_lines(tmp_path / "c.jsonl", [line]))
    assert isinstance(error, ParseError) and str(error) == message


def test_blank_lines_are_skipped_and_numbering_follows_the_file(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "c.jsonl",
        ["", json.dumps({"id": "a", "text": "x"}), "   ", json.dumps({"id": "b", "text": "y"})],
    )
    assert [(n, d.source) for n, d in iter_jsonl(path)] == [(2, "a"), (4, "b")]


def test_a_missing_title_falls_back_to_the_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [json.dumps({"id": "doc-9", "text": "x"})])
    ((_, doc),) = list(iter_jsonl(path))
    assert doc.title == "doc-9"


def test_a_utf8_bom_on_the_first_line_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": 1, "text": "x"}).encode() + b"\n")
    ((_, doc),) = list(iter_jsonl(path))
    assert isinstance(doc, ParsedDocument)


def test_a_line_that_is_not_utf8_is_an_error_for_that_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = json.dumps({"id": 1, "text": "x"}).encode()
    path.write_bytes(good + b"\n" + '{"id": 2, "text": "中文"}'.encode("gbk") + b"\n")
    results = list(iter_jsonl(path))
    assert isinstance(results[0][1], ParsedDocument)
    assert (
        str(results[1][1]) == "line 2 of c.jsonl: not valid UTF-8 text; save the corpus as UTF-8."
    )


def test_an_empty_jsonl_file_is_rejected_before_reading(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(ParseError, match=r"^empty\.jsonl is empty\.$"):
        iter_jsonl(tmp_path / "empty.jsonl")  # raised at the call, not at the first next()


def test_a_missing_corpus_is_rejected_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"^nope\.jsonl could not be read"):
        iter_jsonl(tmp_path / "nope.jsonl")


def test_a_large_corpus_is_streamed_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    record = {"id": 0, "title": "t", "text": "数据安全 " * 100}
    with path.open("w", encoding="utf-8") as handle:
        for index in range(20_000):  # about 12 MB
            record["id"] = index
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_jsonl(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 20_000
    assert peak < 2 * 1024 * 1024


@pytest.mark.shared_data
def test_the_shared_cmrc_corpus_reads_without_errors() -> None:
    path = SHARED / "eval" / "cmrc2018-500" / "corpus.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared/data holds the real test documents)")
    results = list(iter_jsonl(path))
    assert len(results) == 137
    assert all(isinstance(doc, ParsedDocument) and doc.pages[0].text for _, doc in results)
