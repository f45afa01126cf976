"""The public surface of zhixing.core.ingest: exactly the functions the pipeline and CLI call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import zhixing.core.ingest

ROOT = Path(__file__).parents[1]


def test_public_api_is_exactly_the_documented_functions() -> None:
    assert sorted(zhixing.core.ingest.__all__) == [
        "chunk_document",
        "detect_kind",
        "iter_jsonl",
        "parse_file",
        "sanitize_name",
    ]
    for name in zhixing.core.ingest.__all__:
        assert callable(getattr(zhixing.core.ingest, name))
        assert getattr(zhixing.core.ingest, name).__doc__


@pytest.mark.process
def test_importing_ingest_does_not_import_streamlit() -> None:
    code = "import sys, zhixing.core.ingest; print('streamlit' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_only_ingest_modules_import_the_parsing_libraries() -> None:
    libraries = ("pdfplumber", "pypdfium2", "docx", "bs4", "charset_normalizer")
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        if path.parent.name == "ingest":
            continue
        text = path.read_text(encoding="utf-8")
        for lib in libraries:
            if f"import {lib}" in text or f"from {lib}" in text:
                offenders.append(f"{path.relative_to(ROOT)}: {lib}")
    assert offenders == []
