"""Document ingestion: parse files into pages (PDF, DOCX, HTML, Markdown, text, JSONL corpora)
and cut parsed documents into structure-aware chunks.

This package is the only part of Zhixing that imports pdfplumber, pypdfium2, python-docx,
BeautifulSoup and charset_normalizer.
"""

from zhixing.core.ingest.chunk import chunk_document
from zhixing.core.ingest.detect import detect_kind
from zhixing.core.ingest.file_names import sanitize_name
from zhixing.core.ingest.jsonl import iter_jsonl
from zhixing.core.ingest.parse import parse_file

__all__ = ["chunk_document", "detect_kind", "iter_jsonl", "parse_file", "sanitize_name"]
