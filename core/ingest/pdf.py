"""Parse a PDF into pages: open and vet the file, fan page ranges out to worker processes, and
turn what the pages gave into a ParsedDocument with a title and honest warnings.

Every parse runs in worker processes, even a one-page file, so that a hostile file cannot hold
a build forever: past PARSE_TIMEOUT_S they are killed. That costs a process start (about 0.3 s)
per file. Files over MAX_PDF_BYTES are refused before they are opened.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pypdfium2 as pdfium

import zhixing

from ..errors import ParseError
from ..models import Page, ParsedDocument
from .pdf_page import PageResult, open_pdf
from .pdf_streams import Listener, OcrProgress, Worker

__all__ = [
    "MAX_PDF_BYTES",
    "PARSE_TIMEOUT_S",
    "OcrProgress",
    "ParseCancelled",
    "cancelling",
    "parse_pdf",
    "reporting_ocr",
]

# The longest one PDF's parse may take, all its workers together (a few minutes is a
# 1,000-page standard on a slow machine), or, while OCR reads a scan, the longest from one page
# read to the next. Read at call time, so tests may lower it.
PARSE_TIMEOUT_S = 600.0
# The largest PDF accepted: far above any text document (uploads stop at 200 MB already).
MAX_PDF_BYTES = 512 * 2**20
# Below this many pages per worker, starting a process costs more than it saves.
_MIN_PAGES_PER_WORKER = 8
# How often a parse that waits for its workers looks at its build's cancel and its deadline.
_POLL_S = 0.1
# The cancel of the build this thread parses for (`cancelling`), and who hears of its OCR.
_CANCEL = threading.local()
_OCR = threading.local()


class ParseCancelled(Exception):  # noqa: N818 - a signal to the build, not a parse error
    """The build was cancelled while a PDF parsed; its worker processes were killed."""


@contextmanager
def cancelling(cancel: threading.Event) -> Iterator[None]:
    """Parse PDFs in this thread so that `cancel` kills their workers (ParseCancelled)."""
    with _bound(_CANCEL, "event", cancel):
        yield


@contextmanager
def reporting_ocr(report: OcrProgress) -> Iterator[None]:
    """Parse PDFs in this thread so that `report` hears of each page OCR reads (from the
    threads that watch the worker processes)."""
    with _bound(_OCR, "report", report):
        yield


@contextmanager
def _bound(local: threading.local, name: str, value: object) -> Iterator[None]:
    """`local.name` is `value` for the block, then what it was before."""
    before = getattr(local, name, None)
    setattr(local, name, value)
    try:
        yield
    finally:
        setattr(local, name, before)


# Metadata titles that are really a file name or a tool's placeholder.
_STRAY_TITLES = re.compile(
    r"^(untitled|document\d*|microsoft word\b.*"
    r"|.*\.(docx?|pdf|rtf|txt|exe|xlsx?|pptx?|html?|indd|tex|dvi|ps|odt|qxd|wpd))$",
    re.I,
)


def parse_pdf(
    path: Path, source: str, *, workers: int = 1, timeout_s: float | None = None
) -> ParsedDocument:
    """Parse the PDF at `path`; raise ParseError naming `source` when it cannot be read, is too
    big, or takes longer than `timeout_s` (default PARSE_TIMEOUT_S)."""
    timeout_s = PARSE_TIMEOUT_S if timeout_s is None else timeout_s
    _check_size(path, source)
    vetted = _vet(path, source)
    if vetted is None:
        # pdfium refused the file; pdfminer is more forgiving of some broken structures.
        results, meta_title = _rescue(path.resolve(), source, timeout_s)
    else:
        count, meta_title = vetted
        ranges = _ranges(count, workers)
        # OCR in each worker on its share of the cores: onnxruntime would take them all.
        threads = max(1, (os.cpu_count() or 1) // len(ranges))
        jobs = [[str(a), str(b), str(threads)] for a, b in ranges]
        outputs = _run_workers(path.resolve(), source, jobs, timeout_s)
        results = [PageResult(**item) for out in outputs for item in json.loads(out)]
    pages, warnings = _collect(results, source)
    pages = _join_continued_tables(_drop_running_lines(pages))
    title = _title(meta_title, pages, path)
    return ParsedDocument(source, "pdf", title, tuple(pages), tuple(warnings))


def _check_size(path: Path, source: str) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ParseError(f"{source} could not be read ({exc.strerror or exc}).") from None
    if size > MAX_PDF_BYTES:
        raise ParseError(
            f"{source} is larger than the {MAX_PDF_BYTES / 2**20:g} MB a PDF may be;"
            " split it into smaller files."
        )


def _declares_encryption(path: Path) -> bool:
    """Whether the file has an encryption dictionary (`/Encrypt` in a trailer)."""
    try:
        return b"/Encrypt" in path.read_bytes()
    except OSError:
        return False


def _vet(path: Path, source: str) -> tuple[int, str] | None:
    """Open the file once: its page count and metadata title, or None if pdfium cannot."""
    try:
        document = open_pdf(path)
    except pdfium.PdfiumError as exc:
        message = str(exc).lower()
        # pdfium's last error is per thread and may be stale (a zero-page file can fail to load
        # with an earlier file's "password" error): believe it only of a file that says so.
        if ("password" in message or "security" in message) and _declares_encryption(path):
            raise ParseError(
                f"{source} is encrypted (password-protected); decrypt it and add it again."
            ) from None
        return None
    except OSError as exc:
        raise ParseError(f"{source} could not be read ({exc.strerror or exc}).") from None
    except Exception:  # pdfium's binding can fail in other ways on hostile input
        return None
    try:
        count = len(document)
        title = (document.get_metadata_value("Title") or "").strip()
    finally:
        document.close()
    if count == 0:
        raise ParseError(f"{source} has no pages.")
    return count, title


def _rescue(path: Path, source: str, timeout_s: float) -> tuple[list[PageResult], str]:
    (out,) = _run_workers(path, source, [["--rescue"]], timeout_s)
    found = json.loads(out)
    if not found["readable"]:
        raise ParseError(f"{source} is not a readable PDF (the file is damaged or incomplete).")
    results = [PageResult(**item) for item in found["pages"]]
    if not results:
        raise ParseError(f"{source} has no pages.")
    return results, str(found["title"])


def _ranges(count: int, workers: int) -> list[tuple[int, int]]:
    workers = max(1, min(workers, count // _MIN_PAGES_PER_WORKER))
    size, extra = divmod(count, workers)
    ranges, start = [], 0
    for index in range(workers):
        stop = start + size + (1 if index < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


def _worker_command() -> list[str]:
    """The worker process's command line, before its arguments (a seam for tests)."""
    return [sys.executable, "-m", "zhixing.core.ingest.pdf_worker"]


def _run_workers(path: Path, source: str, jobs: list[list[str]], timeout_s: float) -> list[bytes]:
    """Run one worker process per job (its arguments after the path); return their outputs.

    Plain subprocesses rather than multiprocessing: the app and the build pipeline run threads
    (forking them can deadlock), and spawn/forkserver would re-run the caller's main script,
    which under Streamlit is a page. All of them share one deadline; past it all are killed.
    OCR moves the deadline: `timeout_s` after the last page it read.
    Their stderr is read as it comes, for OCR progress (core/ingest/pdf_streams.py).
    """
    # The folder that holds the `zhixing` package (a checkout, or site-packages), so that
    # `python -m zhixing.core.ingest…` finds it however this process was started.
    root = Path(zhixing.__file__).resolve().parents[1]
    deadline = time.monotonic() + timeout_s
    listener = Listener(getattr(_OCR, "report", None))
    workers = [
        Worker(
            subprocess.Popen(
                [*_worker_command(), str(path), *args],
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            ),
            listener,
        )
        for args in jobs
    ]
    outputs: list[bytes] = []
    cancel: threading.Event | None = getattr(_CANCEL, "event", None)
    try:
        for worker in workers:
            while True:
                # A scan's pages take seconds each: while OCR reads pages, the limit runs from
                # the last one read (a worker stuck on one page is still stopped).
                left = max(deadline, listener.last_read + timeout_s) - time.monotonic()
                if left <= 0:
                    raise ParseError(
                        f"{source} took longer than the {timeout_s:g}-second limit to parse"
                        " and was stopped; check that it is not damaged, or split it into"
                        " smaller files."
                    )
                try:
                    worker.proc.wait(timeout=min(left, _POLL_S))
                    break
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel.is_set():
                        raise ParseCancelled from None  # the `finally` kills the workers
            worker.join()
            if worker.proc.returncode != 0:
                raise ParseError(
                    listener.error or f"{source} crashed the PDF parser; the file may be damaged."
                )
            outputs.append(worker.out)
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.proc.kill()
                worker.proc.wait()
            worker.join()
    return outputs


def _collect(results: Sequence[PageResult], source: str) -> tuple[list[Page], list[str]]:
    pages = [Page(r.number, r.text, ocr=r.ocr) for r in results if r.status == "ok"]
    scanned = [r.number for r in results if r.status == "scanned"]
    failed = [r.number for r in results if r.status == "error"]
    if not pages:
        if failed and not scanned:
            raise ParseError(f"{source} could not be parsed: none of its pages can be read.")
        if not scanned:
            raise ParseError(f"{source} contains no text (its pages are blank).")
        raise ParseError(
            f"{source} has no text layer and OCR found no text on its pages; check that the"
            " scans are not blank or far too faint."
        )
    warnings = []
    if scanned:
        warnings.append(
            f"{_pages_phrase(scanned)} no text layer and OCR found no text; "
            f"{'they were' if len(scanned) > 1 else 'it was'} skipped."
        )
    if failed:
        warnings.append(
            f"{_pages_phrase(failed)} could not be read; "
            f"{'they were' if len(failed) > 1 else 'it was'} skipped."
        )
    return pages, warnings


def _pages_phrase(numbers: Sequence[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:20])
    more = f" and {len(numbers) - 20} more" if len(numbers) > 20 else ""
    verb = "has" if len(numbers) == 1 else "have"
    return f"{'page' if len(numbers) == 1 else 'pages'} {shown}{more} {verb}"


_DIGITS = re.compile(r"\d+")
_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}")


def _drop_running_lines(pages: list[Page]) -> list[Page]:
    """Remove running headers and footers: edge lines repeated on most pages (numbers masked)."""
    if len(pages) < 4:
        return pages

    def edges(page: Page) -> set[str]:
        lines = [ln.strip() for ln in page.text.split("\n") if ln.strip()]
        return {_edge_key(ln) for ln in lines[:2] + lines[-2:]}

    counts = Counter(key for page in pages for key in edges(page))
    running = {key for key, n in counts.items() if n >= max(3, 0.5 * len(pages))}
    if not running:
        return pages
    cleaned = []
    for page in pages:
        keep = _strip_edges(page.text.split("\n"), running)
        if keep:  # a page that held nothing but its header and footer goes
            cleaned.append(replace(page, text="\n".join(keep)))
    return cleaned or pages


def _join_continued_tables(pages: list[Page]) -> list[Page]:
    """Drop a table header a page repeats from the table that ends the page before it.

    Word repeats header rows on each page; without them the rows run on as one table.
    """
    joined = [pages[0]] if pages else []
    for page in pages[1:]:
        before = joined[-1].text.rstrip("\n").split("\n")
        lines = page.text.split("\n")
        if len(lines) > 2 and lines[0].startswith("|") and lines[1].startswith("|---"):
            header = _last_table_header(before)
            if header is not None and header == lines[0]:
                page = replace(page, text="\n".join(lines[2:]))
        joined.append(page)
    return joined


def _last_table_header(lines: list[str]) -> str | None:
    if not lines or not lines[-1].startswith("|"):
        return None
    for index in range(len(lines) - 1, 0, -1):
        if not lines[index].startswith("|"):
            return None
        if lines[index].startswith("|---"):
            return lines[index - 1]
    return None


def _edge_key(line: str) -> str:
    """A page's edge line as running headers are compared: numbers masked, and a table row read
    as its cells' words. A table that runs to the page's edge can take the header line in as a
    row ("| OWASP | Application Security Verification Standard 4.0.3 | | 52 |" on three pages of
    the English ASVS PDF), which then matched no other page's header and stayed in the text."""
    text = line.strip()
    if text.startswith("|"):
        text = " ".join(cell.strip() for cell in text.strip("|").split("|") if cell.strip())
    return _DIGITS.sub("#", " ".join(text.split()))


def _strip_edges(lines: list[str], running: set[str]) -> list[str]:
    lines = list(lines)
    for _ in range(2):
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines and _edge_key(lines[0]) in running:
            lines.pop(0)
            if lines and _SEPARATOR_ROW.match(lines[0]):
                lines.pop(0)  # the header was taken for the table's header row: rows continue
        while lines and not lines[-1].strip():
            lines.pop()
        if lines and _edge_key(lines[-1]) in running:
            lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines


def _title(meta_title: str, pages: Sequence[Page], path: Path) -> str:
    if _meaningful(meta_title):
        return meta_title
    for line in pages[0].text.split("\n")[:8] if pages else []:
        line = line.strip().lstrip("#").strip()
        if _meaningful(line) and len(line) <= 100 and not line.startswith("|"):
            return line
    return path.stem


def _meaningful(title: str) -> bool:
    letters = sum(1 for c in title if c.isalpha())
    return letters >= 2 and not _STRAY_TITLES.match(title.strip())
