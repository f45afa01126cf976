"""A model that takes images reads scanned pages (ZHIXING_VISION_MODEL, issue 37): every page is
OCR'd as before, the model reads it too, and its text is used only where it keeps OCR's words;
any failure leaves OCR's text and a warning. The model adds, never subtracts.

The page is the first of tests/fixtures/scanned/scanned.pdf (a photocopied Chinese standard,
pages.json the text drawn); the endpoint is the real HTTP fake of the OpenAI API.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pytest

from tests.fake_openai import FakeOpenAI, default_responder, images_of
from zhixing.core.build.events import BuildReport, ProgressEvent
from zhixing.core.build.vision import judge, read_scans
from zhixing.core.config import Settings
from zhixing.core.embed import BuiltinEmbedder
from zhixing.core.errors import ConfigError
from zhixing.core.llm.client import LLMClient
from zhixing.core.llm.prompts import PAGE_READING, PageReading, png_url
from zhixing.core.llm.protocol import CallsCancelled
from zhixing.core.llm.structured import prepare
from zhixing.core.models import Page, ParsedDocument
from zhixing.core.service import KnowledgeService

SCANNED = Path(__file__).parent / "fixtures" / "scanned"
DRAWN = "\n".join(json.loads((SCANNED / "pages.json").read_text(encoding="utf-8"))[0]["lines"])
# A sentence only the model's reading holds: OCR cannot find it on the page.
ONLY_THE_MODEL = "附注：本页口令条款由视觉模型核对，代号青鸾九号。"
VISION = "fake-vision"


@pytest.fixture(scope="module")
def first_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Page 1 of the scanned fixture as a PDF of its own (one page: one OCR read per build)."""
    path = tmp_path_factory.mktemp("vision") / "scan.pdf"
    scan = pdfium.PdfDocument(str(SCANNED / "scanned.pdf"))
    one = pdfium.PdfDocument.new()
    one.import_pages(scan, [0])
    one.save(path)
    one.close()
    scan.close()
    return path


def reading(text: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A responder whose vision model reads every page as `text`."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if images_of(body):
            return {"text": text, "unreadable": False}
        return default_responder(body)

    return respond


def build(
    home: Path, fake: FakeOpenAI, pdf: Path, embedder: BuiltinEmbedder, *, vision: str = VISION
) -> tuple[KnowledgeService, BuildReport, list[ProgressEvent]]:
    settings = Settings(
        home=home,
        openai_base_url=fake.url,
        chat_model="fake-model",
        vision_model=vision,
        structured_output="json_schema",
        parse_workers=1,
        chunk_units=120,
        chunk_overlap_units=0,
    )
    events: list[ProgressEvent] = []
    svc = KnowledgeService(settings, embedder=embedder, llm_options={"backoff_s": 0.01})
    svc.kbs.create("kb")
    report = svc.builds.add("kb", [pdf], on_event=events.append)
    return svc, report, events


@pytest.mark.slow
def test_a_page_the_vision_model_reads_well_is_indexed_by_its_reading_and_stays_marked(
    tmp_path: Path, first_page: Path, embedder: BuiltinEmbedder
) -> None:
    with FakeOpenAI(reading(f"{DRAWN}\n{ONLY_THE_MODEL}")) as fake:
        svc, report, events = build(tmp_path, fake, first_page, embedder)
        with svc:
            assert report.ok and report.added == ["scan.pdf"] and report.warnings == []
            top = svc.search.query("青鸾九号", ["kb"], top_k=3)[0]
            assert ONLY_THE_MODEL in top.text and (top.page, top.ocr) == (1, True)
        (asked,) = [body for body in fake.bodies() if images_of(body)]
    assert asked["model"] == VISION
    (url,) = images_of(asked)
    assert url.startswith("data:image/png;base64,")
    png = base64.b64decode(url.removeprefix("data:image/png;base64,"))
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1241, 1754)  # A4 at OCR's 150 dpi: the image OCR read
    assert [(e.step, e.steps) for e in events if e.stage == "vision"] == [(1, 1)]


@pytest.mark.slow
def test_a_vision_model_that_answers_500_leaves_the_ocr_text_and_a_warning(
    tmp_path: Path, first_page: Path, embedder: BuiltinEmbedder
) -> None:
    fails = FakeOpenAI(reading(DRAWN), chaos=lambda body: "500" if images_of(body) else None)
    with fails as fake:
        svc, report, _ = build(tmp_path, fake, first_page, embedder)
        with svc:
            assert report.ok and report.added == ["scan.pdf"]
            (warning,) = report.warnings
            assert warning.startswith("scan.pdf: page 1 keeps its OCR text") and "500" in warning
            top = svc.search.query("逐步延长的锁定", ["kb"], top_k=3)[0]
            assert "逐步延长的锁定" in top.text and (top.page, top.ocr) == (1, True)


@pytest.mark.slow
def test_a_reading_far_shorter_than_ocr_is_not_used_and_the_warning_says_how_much_it_kept(
    tmp_path: Path, first_page: Path, embedder: BuiltinEmbedder
) -> None:
    short = "\n".join(DRAWN.splitlines()[:3] + [ONLY_THE_MODEL])
    with FakeOpenAI(reading(short)) as fake:
        svc, report, _ = build(tmp_path, fake, first_page, embedder)
        with svc:
            (warning,) = report.warnings
            assert "keeps only" in warning and "of the words OCR read" in warning
            assert all(
                ONLY_THE_MODEL not in hit.text for hit in svc.search.query("青鸾九号", ["kb"])
            )
            top = svc.search.query("逐步延长的锁定", ["kb"], top_k=3)[0]
            assert "逐步延长的锁定" in top.text


@pytest.mark.slow
def test_without_the_setting_no_page_image_reaches_the_endpoint(
    tmp_path: Path, first_page: Path, embedder: BuiltinEmbedder
) -> None:
    with FakeOpenAI(reading(ONLY_THE_MODEL)) as fake:
        svc, report, events = build(tmp_path, fake, first_page, embedder, vision="")
        with svc:
            assert report.ok and report.warnings == []
            assert "逐步延长的锁定" in svc.search.query("逐步延长的锁定", ["kb"])[0].text
        assert fake.chat_count > 0  # the chat model indexed questions; no request had an image
        assert not any(images_of(body) for body in fake.bodies())
        assert all(body["model"] != VISION for body in fake.bodies())
    assert not [e for e in events if e.stage == "vision"]


OCR = "3.1 用户口令长度不应少于12个字符，系统应允许使用不少于64个字符的口令。\n3.2 不应强制规定字符组合"


def test_an_empty_or_unreadable_reading_is_refused_as_finding_no_text() -> None:
    assert judge(OCR, PageReading(text="  \n")) == "it found no text"
    assert judge(OCR, PageReading(text="", unreadable=True)) == "it found no text"


def test_a_refusal_keeps_none_of_the_words_ocr_read_and_is_refused() -> None:
    why = judge(OCR, PageReading(text="I'm sorry, but I can't transcribe documents."))
    assert why == "its text keeps only 0% of the words OCR read"


def test_a_reading_with_ocr_words_in_a_table_and_a_few_misreads_put_right_is_used() -> None:
    misread = OCR.replace("口令长度", "口今长度")  # one character OCR got wrong
    table = "| 条款 | 要求 |\n|---|---|\n" + "".join(f"| {line} |\n" for line in OCR.splitlines())
    assert judge(misread, PageReading(text=table + "附注：多出的一句。")) == ""


def test_the_vision_model_is_read_from_the_environment_and_needs_an_endpoint() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ZHIXING_VISION_MODEL": " qwen2.5-vl "}
    assert Settings.from_env(env).vision_model == "qwen2.5-vl"
    assert Settings.from_env({}).vision_model == ""
    with pytest.raises(ConfigError, match="ZHIXING_VISION_MODEL"):
        Settings.from_env({"ZHIXING_VISION_MODEL": "qwen2.5-vl"})


def test_a_page_image_is_sent_as_an_image_part_and_keys_its_cache_entry() -> None:
    def method(_: str) -> str:
        return "json_schema"

    first = prepare(PAGE_READING, {"page_image": png_url(b"page one")}, VISION, method)
    second = prepare(PAGE_READING, {"page_image": png_url(b"page two")}, VISION, method)
    assert first.user == second.user and first.key != second.key
    text, image = first.human().content
    assert isinstance(text, dict) and text["text"] == first.user
    assert image == {"type": "image_url", "image_url": {"url": png_url(b"page one")}}
    with pytest.raises(ValueError, match="page_image"):
        prepare(PAGE_READING, {"page_image": "https://example.com/page.png"}, VISION, method)


def test_a_cancel_stops_waiting_for_the_vision_model_at_once(first_page: Path) -> None:
    doc = ParsedDocument("scan.pdf", "pdf", "scan", (Page(1, DRAWN, ocr=True),))
    cancel = threading.Event()
    with FakeOpenAI(reading(DRAWN), latency_s=5) as fake:
        settings = Settings(
            openai_base_url=fake.url, vision_model=VISION, structured_output="json_schema"
        )
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(CallsCancelled):
            read_scans(doc, first_page, LLMClient(settings), cancel=cancel)
        assert time.monotonic() - started < 2
