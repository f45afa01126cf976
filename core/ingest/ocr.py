"""Read a scanned PDF page by OCR, offline: the one module that imports rapidocr-onnxruntime.

RapidOCR runs PaddleOCR's PP-OCRv4 Chinese/English detection and recognition models (ONNX, in
its wheel: nothing is downloaded) on onnxruntime. It was chosen over Tesseract's chi_sim by
benchmarks/bench_ocr.py (README, "Scanned PDFs"). The models load once per process, on the first
page read (about a second), never at import. The page is rendered with pypdfium2.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pypdfium2 as pdfium

from ..errors import ParseError
from .ocr_text import Box, page_text

__all__ = ["OCR_DPI", "read_image", "read_page"]

# Pages are rendered at this resolution: PP-OCRv4 reads 10-pt CJK well from 150 dpi up, and each
# step above costs detection time (bench_ocr.py).
OCR_DPI = 150
_ENGINE: Any = None
_LOCK = threading.Lock()


def _engine(threads: int) -> Any:
    global _ENGINE
    with _LOCK:
        if _ENGINE is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError as exc:  # opencv-python without libGL.so.1, or no wheel at all
                raise ParseError(
                    f"OCR cannot start ({exc}); run `make install` again, or install"
                    " opencv-python-headless in Zhixing's environment."
                ) from None
            # onnxruntime takes every core by default; the workers of a parse share them.
            _ENGINE = RapidOCR(intra_op_num_threads=threads) if threads > 0 else RapidOCR()
    return _ENGINE


def read_image(image: np.ndarray, *, threads: int = 0) -> tuple[str, int]:
    """Read an RGB image (height x width x 3, uint8); return its text and how many tables.
    `threads` (0: all cores) is how many the engine may use, fixed by the first call."""
    found, _ = _engine(threads)(image)
    boxes = [
        Box(str(text), tuple((float(x), float(y)) for x, y in corners))
        for corners, text, _score in found or ()
    ]
    return page_text(boxes)


def read_page(page: pdfium.PdfPage, *, threads: int = 0) -> tuple[str, int]:
    """Render a PDF page and read it by OCR; return its text and how many tables it holds."""
    bitmap = page.render(scale=OCR_DPI / 72, grayscale=True)
    try:
        grey = bitmap.to_numpy()
    finally:
        bitmap.close()
    grey = grey.reshape(grey.shape[0], grey.shape[1])
    return read_image(np.ascontiguousarray(np.stack([grey] * 3, axis=-1)), threads=threads)
