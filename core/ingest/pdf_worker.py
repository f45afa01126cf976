"""The PDF parse worker process: `python -m core.ingest.pdf_worker PATH START STOP [THREADS]`.

It parses pages [START, STOP) (OCR on THREADS cores, all by default) and writes them to stdout
as JSON. `PATH --rescue` reads the whole file with pdfminer instead (for files pdfium refuses) and writes `{"readable", "title",
"pages"}`, `readable` false when pdfminer cannot read it either. A module of its own, which
the package does not import, so that running it with -m does not load it twice. Every parse
runs in such a process so that core/ingest/pdf.py can kill it past its time limit.

Scanned pages are read by OCR after the text pages; the worker tells its progress on stderr,
one line a step (`ocr-todo K`, `ocr-page N`), and a failure the user can act on as `error
SENTENCE` before it exits with status 3.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from ..errors import ParseError
from .pdf_page import parse_page_range, parse_with_pdfminer, read_scanned

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Parse what the command line names and print the results as JSON."""
    args = argv if argv is not None else sys.argv[1:]
    if args[1:2] == ["--rescue"]:
        try:
            results, title = parse_with_pdfminer(Path(args[0]))
        except Exception:  # pdfminer raises many types for broken files; all mean "unreadable"
            results, title = [], ""
            readable = False
        else:
            readable = True
        out: object = {"readable": readable, "title": title, "pages": [asdict(r) for r in results]}
    else:
        path, start, stop = args[:3]
        threads = int(args[3]) if len(args) > 3 else 0
        results = parse_page_range(path, int(start), int(stop))
        try:
            results = read_scanned(path, results, _tell, threads=threads)
        except ParseError as exc:
            _tell(f"error {exc}")
            return 3
        out = [asdict(r) for r in results]
    json.dump(out, sys.stdout, ensure_ascii=False)
    return 0


def _tell(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
