"""The PDF parse worker process: `python -m core.ingest.pdf_worker PATH START STOP`.

It parses pages [START, STOP) and writes them to stdout as JSON. A module of its own, which the
package does not import, so that running it with -m does not load it twice.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from core.ingest.pdf_page import parse_page_range

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Parse the page range given on the command line and print the results as JSON."""
    path, start, stop = (argv if argv is not None else sys.argv[1:])[:3]
    results = parse_page_range(path, int(start), int(stop))
    json.dump([asdict(r) for r in results], sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
