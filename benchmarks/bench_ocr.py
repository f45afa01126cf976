"""OCR benchmark: character accuracy and seconds per page of the OCR engines on scanned Chinese
pages we draw ourselves, and (with --scan) the build rate of a 75-page scanned PDF.

    python benchmarks/bench_ocr.py [--scan [DATA_DIR]]

The pages are those of tests/fixtures/scanned (our own text in the style of a security standard,
one table; see make_scanned.py, which needs Debian's fonts-noto-cjk to draw), each read twice:
clean, and degraded like a photocopy (turned 1-3 degrees, blurred, grey, speckled, JPEG at 22).
Accuracy is 1 - CER: the edit distance between what the engine read and what was drawn, both
NFKC-normalized without whitespace or table rules, over the length of the drawn text.

Engines: RapidOCR (rapidocr-onnxruntime, PP-OCRv4, what Zhixing uses) and Tesseract 5 with
chi_sim+eng (`apt-get install tesseract-ocr tesseract-ocr-chi-sim`, `pip install pytesseract`);
an engine that is not installed is reported as skipped.

--scan renders OWASP ASVS 4.0.3 zh-cn (75 pages, from the shared data folder) at 150 dpi, degrades
each page the same way, writes an image-only PDF under /tmp, and times `zhixing add` of it into a
fresh home, offline. It prints a table and writes benchmarks/results/ocr.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import write_results  # noqa: E402
from tests.fixtures.scanned.make_scanned import (  # noqa: E402
    DPI,
    PAGES,
    SCANS,
    degrade,
    drawn_lines,
    render,
)

ASVS = ("docs", "asvs-4.0.3", "OWASP_ASVS_4.0.3-zh-cn.pdf")


def normalized(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if not c.isspace() and c not in "|-")


def edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return row[-1]


def rapidocr_reader() -> Any:
    from zhixing.core.ingest import ocr

    ocr.read_image(np.full((64, 64, 3), 255, np.uint8))  # load the models outside the timing

    def read(image: Any) -> str:
        return ocr.read_image(np.asarray(image.convert("RGB")))[0]

    return read


def tesseract_reader() -> Any:
    import pytesseract

    pytesseract.get_tesseract_version()  # raises when the binary is missing

    def read(image: Any) -> str:
        return str(pytesseract.image_to_string(image, lang="chi_sim+eng"))

    return read


def accuracy_rows() -> list[dict[str, Any]]:
    clean = [render(page) for page in PAGES]
    scanned = [
        degrade(image, degrees, blur, seed)
        for seed, (image, (degrees, blur)) in enumerate(zip(clean, SCANS, strict=True))
    ]
    truth = [normalized("".join(drawn_lines(page))) for page in PAGES]
    rows = []
    for name, make in (("rapidocr", rapidocr_reader), ("tesseract chi_sim", tesseract_reader)):
        try:
            read = make()
        except Exception as exc:  # not installed: say so rather than fail the other engine
            rows.append({"engine": name, "skipped": f"{type(exc).__name__}: {exc}"})
            continue
        for condition, images in (("clean", clean), ("photocopy", scanned)):
            errors = chars = 0
            seconds = 0.0
            for image, expected in zip(images, truth, strict=True):
                start = time.perf_counter()
                got = normalized(read(image))
                seconds += time.perf_counter() - start
                errors += edit_distance(got, expected)
                chars += len(expected)
            rows.append(
                {
                    "engine": name,
                    "pages": condition,
                    "accuracy": round(1 - errors / chars, 4),
                    "s_per_page": round(seconds / len(images), 2),
                }
            )
    return rows


def scanned_asvs(data_dir: Path, out: Path) -> int:
    """Write ASVS zh-cn as a photocopied, image-only PDF at `out`; return its page count."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(data_dir.joinpath(*ASVS)))
    images = []
    try:
        for index in range(len(document)):
            page = document[index]
            clean = page.render(scale=DPI / 72, grayscale=True).to_pil().convert("L")
            page.close()
            degrees, blur = SCANS[index % len(SCANS)]
            images.append(degrade(clean, degrees, blur, index))
    finally:
        document.close()
    images[0].save(out, "PDF", title="", resolution=DPI, quality=22, save_all=True,
                   append_images=images[1:])  # fmt: skip
    return len(images)


def scan_row(data_dir: Path) -> dict[str, Any]:
    """Time `zhixing add` of the 75-page scanned PDF into a fresh home, offline."""
    with tempfile.TemporaryDirectory(prefix="zhixing-ocr-") as tmp:
        pdf = Path(tmp) / "asvs-zh-scanned.pdf"
        pages = scanned_asvs(data_dir, pdf)
        env = {**os.environ, "ZHIXING_HOME": str(Path(tmp) / "home"), "OPENAI_BASE_URL": ""}
        zx = [sys.executable, "-m", "zhixing.cli.main"]
        subprocess.run([*zx, "kb", "create", "scan"], env=env, check=True, cwd=ROOT)
        start = time.perf_counter()
        done = subprocess.run(
            [*zx, "add", "scan", str(pdf), "--json"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        report = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
        return {
            "benchmark": "add_scanned_asvs_zh",
            "pages": pages,
            "pdf_mb": round(pdf.stat().st_size / 2**20, 1),
            "seconds": round(seconds, 1),
            "pages_per_s": round(pages / seconds, 3),
            "chunks": report.get("chunks"),
            "failed": report.get("failed"),
            "cores": os.cpu_count(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scan", nargs="?", const=ROOT.parent / "shared" / "data", type=Path)
    args = parser.parse_args()
    rows = accuracy_rows()
    print(f"{'engine':<20} {'pages':<10} {'accuracy':>9} {'s/page':>7}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['engine']:<20} skipped: {row['skipped']}")
        else:
            print(
                f"{row['engine']:<20} {row['pages']:<10} {row['accuracy']:>9.1%}"
                f" {row['s_per_page']:>7.2f}"
            )
    result: dict[str, Any] = {"engines": rows}
    if args.scan is not None:
        result["scan"] = scan_row(args.scan)
        print(", ".join(f"{k}={v}" for k, v in result["scan"].items()))
    write_results("ocr.json", result)


if __name__ == "__main__":
    main()
