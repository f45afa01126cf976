"""Parse benchmarks: PDF speed with table extraction, table quality, and memory on 1,000 pages.

Run `python benchmarks/bench_parse.py` from the repository root: it prints a table and writes
benchmarks/results/parse.json. `run(data_dir)` returns the rows for bench_build to include.
"""

from __future__ import annotations

import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from zhixing.core.ingest import chunk_document, parse_file  # noqa: E402

ASVS = ("docs", "asvs-4.0.3", "OWASP_ASVS_4.0.3-zh-cn.pdf")
ANSWER_KEY = ("docs", "asvs-4.0.3", "ASVS_4.0.3-zh-cn.csv")
WORKERS = 2
BIG_PAGES = 1000


def run(data_dir: Path) -> list[dict]:
    """Run every parse benchmark on the real data under `data_dir` and return result rows."""
    asvs = Path(data_dir).joinpath(*ASVS)
    if not asvs.exists():
        return [{"benchmark": "pdf_parse_asvs_zh", "skipped": f"{asvs} is missing", "met": False}]
    rows = [
        _speed(asvs, WORKERS),
        _speed(asvs, 1),
        _tables(asvs, Path(data_dir).joinpath(*ANSWER_KEY)),
    ]
    rows += _big_pdf(asvs)
    cheatsheets = Path(data_dir) / "docs" / "owasp-cheatsheets"
    if cheatsheets.exists():
        rows.append(_chunking(sorted(cheatsheets.glob("*.md"))))
    return rows


def _speed(pdf: Path, workers: int, repeats: int = 3) -> dict:
    """Median wall time of a full parse (worker start-up included), tables on."""
    times, pages = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        doc = parse_file(pdf, workers=workers)
        times.append(time.perf_counter() - start)
        pages = doc.page_count
    seconds = statistics.median(times)
    suffix = "" if workers == WORKERS else f"_{workers}_worker"
    return {
        "benchmark": f"pdf_parse_asvs_zh{suffix}",
        "pages": pages,
        "workers": workers,
        "seconds": round(seconds, 3),
        "pages_per_s": round(pages / seconds, 1),
        "goal": ">= 15 pages/s",
        "met": pages / seconds >= 15,
    }


def _squash(value: str) -> str:
    value = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", value)  # the CSV keeps Markdown links
    return re.sub(r"\s+", "", value.replace("\\|", "|"))


def _tables(pdf: Path, key_path: Path) -> dict:
    """Compare the requirement rows found in the PDF's tables with the CSV answer key."""
    text = "\n".join(page.text for page in parse_file(pdf).pages)
    rows = {}
    for line in text.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) >= 5 and re.fullmatch(r"\d+\.\d+\.\d+", cells[0]):
            rows[cells[0]] = cells
    with key_path.open(encoding="utf-8") as handle:
        key = list(csv.DictReader(handle))
    found = exact = levels = 0
    for req in key:
        cells = rows.get(req["req_id"].removeprefix("V"))
        if cells is None:
            continue
        found += 1
        exact += _squash(cells[1]) == _squash(req["req_description"])
        wanted = [req[k] == "✓" for k in ("level1", "level2", "level3")]
        levels += [c == "✓" for c in cells[2:5]] == wanted
    return {
        "benchmark": "pdf_tables_asvs_zh_answer_key",
        "requirements": len(key),
        "rows_found": found,
        "descriptions_exact": exact,
        "levels_exact": levels,
        "recall": round(found / len(key), 3),
        "goal": ">= 0.95 of the CSV's requirements found as table rows",
        "met": found >= 0.95 * len(key),
    }


def _build_big_pdf(source: Path, target: Path, pages: int) -> None:
    import pypdfium2 as pdfium  # only to build the test file; the parser has its own imports

    src = pdfium.PdfDocument(str(source))
    out = pdfium.PdfDocument.new()
    count = len(src)
    while len(out) < pages:
        take = min(count, pages - len(out))
        out.import_pages(src, pages=list(range(take)), index=len(out))
    out.save(str(target))
    out.close()
    src.close()


def _tree_rss_kb(root_pid: int) -> int:
    """Sum of VmRSS over a process and all its descendants, read from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        parents[int(entry)] = int(fields.get("PPid", "0").strip() or 0)
        rss[int(entry)] = int((fields.get("VmRSS", "0 kB").split() or ["0"])[0])
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(rss.get(pid, 0) for pid in tree)


def _big_pdf(asvs: Path) -> list[dict]:
    """Parse a 1,000-page PDF in a fresh process; poll the process tree's total RSS."""
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "asvs-1000.pdf"
        _build_big_pdf(asvs, big, BIG_PAGES)
        code = (
            "import sys, time; from pathlib import Path; from core.ingest import parse_file; "
            f"t = time.perf_counter(); d = parse_file(Path(sys.argv[1]), workers={WORKERS}); "
            "print(d.page_count, time.perf_counter() - t)"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(big)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        peak = [0]

        def poll() -> None:
            while proc.poll() is None:
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
                time.sleep(0.05)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        out, _ = proc.communicate()
        watcher.join()
    pages, seconds = out.split()
    peak_mb = peak[0] / 1024
    return [
        {
            "benchmark": "pdf_parse_1000_pages_peak_rss",
            "pages": int(pages),
            "workers": WORKERS,
            "peak_mb": round(peak_mb, 1),
            "measured": "sum of VmRSS over the parsing process and its workers, polled every 50 ms",
            "goal": "< 1024 MB",
            "met": peak_mb < 1024,
        },
        {
            "benchmark": "pdf_parse_1000_pages_speed",
            "pages": int(pages),
            "workers": WORKERS,
            "seconds": round(float(seconds), 2),
            "pages_per_s": round(int(pages) / float(seconds), 1),
            "goal": ">= 15 pages/s",
            "met": int(pages) / float(seconds) >= 15,
        },
    ]


def _chunking(files: list[Path]) -> dict:
    start = time.perf_counter()
    chunks = sum(len(chunk_document(parse_file(path))) for path in files)
    seconds = time.perf_counter() - start
    return {
        "benchmark": "parse_and_chunk_owasp_cheatsheets",
        "files": len(files),
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "files_per_s": round(len(files) / seconds, 1),
        "goal": "informational",
        "met": True,
    }


def _print(rows: list[dict]) -> None:
    for row in rows:
        details = ", ".join(f"{k}={v}" for k, v in row.items() if k not in ("benchmark", "met"))
        mark = "ok  " if row.get("met") else "MISS"
        print(f"{mark} {row['benchmark']:<36} {details}")


if __name__ == "__main__":
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
    results = run(data)
    _print(results)
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "parse.json").write_text(
        json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
