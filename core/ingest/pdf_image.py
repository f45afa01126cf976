"""A PDF page as a PNG image, for a model that reads images (core/build/vision.py).

The page is rendered by pypdfium2 as OCR renders it (grey, at `ocr.OCR_DPI`), so the model sees
what OCR saw, and encoded as an 8-bit greyscale PNG with the standard library's zlib: no image
library is needed for one format this simple (the PNG specification, ISO/IEC 15948).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from .ocr import OCR_DPI
from .pdf_page import open_pdf

__all__ = ["page_png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def page_png(path: Path, number: int) -> bytes:
    """Render page `number` (1-based) of the PDF at `path` as a greyscale PNG."""
    document = open_pdf(path)
    try:
        page = document[number - 1]
        try:
            bitmap = page.render(scale=OCR_DPI / 72, grayscale=True)
            try:
                grey = bitmap.to_numpy()
            finally:
                bitmap.close()
        finally:
            page.close()
    finally:
        document.close()
    return _png(np.ascontiguousarray(grey.reshape(grey.shape[0], grey.shape[1]), dtype=np.uint8))


def _png(grey: np.ndarray) -> bytes:
    """Encode a height x width uint8 array as a PNG (colour type 0, bit depth 8)."""
    height, width = grey.shape
    # Each scanline starts with its filter type; 0 (none) leaves the squeezing to zlib.
    rows = np.hstack([np.zeros((height, 1), dtype=np.uint8), grey]).tobytes()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows, 6))
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )
