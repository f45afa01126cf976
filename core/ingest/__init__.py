"""Document ingestion: parse files into pages (PDF, DOCX, HTML, Markdown, text, JSONL corpora)
and cut parsed documents into structure-aware chunks.

This package is the only part of Zhixing that imports pdfplumber, pypdfium2, python-docx,
BeautifulSoup and charset_normalizer.
"""

from .chunk import chunk_document
from .detect import detect_kind
from .file_names import sanitize_name
from .jsonl import iter_jsonl
from .parse import parse_file

__all__ = ["chunk_document", "detect_kind", "iter_jsonl", "parse_file", "sanitize_name"]
