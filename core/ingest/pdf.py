"""Parse a PDF into pages: open and vet the file, fan page ranges out to worker processes, and
turn what the pages gave into a ParsedDocument with a title and honest warnings."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pypdfium2 as pdfium

from core.errors import ParseError
from core.ingest.pdf_page import PageResult, open_pdf, parse_page_range, parse_with_pdfminer
from core.models import Page, ParsedDocument

__all__ = ["parse_pdf"]

# Below this many pages per worker, starting a process costs more than it saves.
_MIN_PAGES_PER_WORKER = 8
# Metadata titles that are really a file name or a tool's placeholder.
_STRAY_TITLES = re.compile(
    r"^(untitled|document\d*|microsoft word\b.*"
    r"|.*\.(docx?|pdf|rtf|txt|exe|xlsx?|pptx?|html?|indd|tex|dvi|ps|odt|qxd|wpd))$",
    re.I,
)


def parse_pdf(path: Path, source: str, *, workers: int = 1) -> ParsedDocument:
    """Parse the PDF at `path`; raise ParseError naming `source` when it cannot be read."""
    vetted = _vet(path, source)
    if vetted is None:
        # pdfium refused the file; pdfminer is more forgiving of some broken structures.
        results, meta_title = _rescue(path, source)
    else:
        count, meta_title = vetted
        results = _parse_pages(path, source, count, workers)
    pages, warnings = _collect(results, source)
    pages = _join_continued_tables(_drop_running_lines(pages))
    title = _title(meta_title, pages, path)
    return ParsedDocument(source, "pdf", title, tuple(pages), tuple(warnings))


def _vet(path: Path, source: str) -> tuple[int, str] | None:
    """Open the file once: its page count and metadata title, or None if pdfium cannot."""
    try:
        document = open_pdf(path)
    except pdfium.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message or "security" in message:
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


def _rescue(path: Path, source: str) -> tuple[list[PageResult], str]:
    try:
        results, title = parse_with_pdfminer(path)
    except Exception:  # pdfminer raises many types for broken files; all mean "unreadable"
        raise ParseError(
            f"{source} is not a readable PDF (the file is damaged or incomplete)."
        ) from None
    if not results:
        raise ParseError(f"{source} has no pages.")
    return results, title


def _ranges(count: int, workers: int) -> list[tuple[int, int]]:
    workers = max(1, min(workers, count // _MIN_PAGES_PER_WORKER))
    size, extra = divmod(count, workers)
    ranges, start = [], 0
    for index in range(workers):
        stop = start + size + (1 if index < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


def _parse_pages(path: Path, source: str, count: int, workers: int) -> list[PageResult]:
    ranges = _ranges(count, workers)
    if len(ranges) == 1:
        return parse_page_range(str(path), 0, count)
    return _run_workers(path.resolve(), source, ranges)


def _run_workers(path: Path, source: str, ranges: list[tuple[int, int]]) -> list[PageResult]:
    """Parse page ranges in fresh worker processes, each opening the file itself.

    Plain subprocesses rather than multiprocessing: the app and the build pipeline run threads
    (forking them can deadlock), and spawn/forkserver would re-run the caller's main script,
    which under Streamlit is a page.
    """
    root = Path(__file__).resolve().parents[2]  # so `python -m core.ingest...` finds the package
    command = [sys.executable, "-m", "core.ingest.pdf_worker", str(path)]
    procs = [
        subprocess.Popen(
            [*command, str(a), str(b)],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for a, b in ranges
    ]
    results: list[PageResult] = []
    try:
        for proc in procs:
            out, _ = proc.communicate()
            if proc.returncode != 0:
                raise ParseError(f"{source} crashed the PDF parser; the file may be damaged.")
            results.extend(PageResult(**item) for item in json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def _collect(results: Sequence[PageResult], source: str) -> tuple[list[Page], list[str]]:
    pages = [Page(r.number, r.text) for r in results if r.status == "ok"]
    scanned = [r.number for r in results if r.status == "scanned"]
    failed = [r.number for r in results if r.status == "error"]
    if not pages:
        if failed and not scanned:
            raise ParseError(f"{source} could not be parsed: none of its pages can be read.")
        if not scanned:
            raise ParseError(f"{source} contains no text (its pages are blank).")
        raise ParseError(f"{source} has no text layer (a scanned PDF?); OCR is not supported.")
    warnings = []
    if scanned:
        warnings.append(
            f"{_pages_phrase(scanned)} no text layer (scanned images?); "
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


def _drop_running_lines(pages: list[Page]) -> list[Page]:
    """Remove running headers and footers: edge lines repeated on most pages (numbers masked)."""
    if len(pages) < 4:
        return pages

    def edges(page: Page) -> set[str]:
        lines = [ln.strip() for ln in page.text.split("\n") if ln.strip()]
        return {_DIGITS.sub("#", ln) for ln in lines[:2] + lines[-2:]}

    counts = Counter(key for page in pages for key in edges(page))
    running = {key for key, n in counts.items() if n >= max(3, 0.5 * len(pages))}
    if not running:
        return pages
    cleaned = []
    for page in pages:
        keep = _strip_edges(page.text.split("\n"), running)
        if keep:  # a page that held nothing but its header and footer goes
            cleaned.append(Page(page.number, "\n".join(keep)))
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
                page = Page(page.number, "\n".join(lines[2:]))
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


def _strip_edges(lines: list[str], running: set[str]) -> list[str]:
    lines = list(lines)
    for _ in range(2):
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines and _DIGITS.sub("#", lines[0].strip()) in running:
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines and _DIGITS.sub("#", lines[-1].strip()) in running:
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
