"""The streams of a PDF parse's worker process (core/ingest/pdf_worker.py): its stdout, read
whole, and its stderr, read line by line as it comes for OCR progress and a failure's sentence.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO

__all__ = ["Listener", "OcrProgress", "Worker"]

# Told (pages read by OCR so far, pages to read so far) as each scanned page is read.
OcrProgress = Callable[[int, int], None]


class Listener:
    """What a parse's workers say on stderr: OCR progress (summed over them all), passed on to
    the report `reporting_ocr` set, and the sentence of a failure the user can act on."""

    def __init__(self, report: OcrProgress | None) -> None:
        self.report = report
        self.todo = 0
        self.done = 0
        self.error = ""
        self.last_read = 0.0  # time.monotonic() when OCR last read a page
        self._lock = threading.Lock()

    def listen(self, stream: IO[bytes]) -> None:
        for raw in stream:
            kind, _, rest = raw.decode("utf-8", "replace").strip().partition(" ")
            if kind == "error":
                self.error = rest
            elif kind in ("ocr-todo", "ocr-page") and rest.isdigit():
                with self._lock:
                    if kind == "ocr-todo":
                        self.todo += int(rest)
                    else:
                        self.done += 1
                        self.last_read = time.monotonic()
                    done, todo = self.done, self.todo
                if kind == "ocr-page" and self.report is not None:
                    self.report(done, todo)


class Worker:
    """A worker process, and the threads that read its stdout (whole) and stderr (by line)."""

    def __init__(self, proc: subprocess.Popen[bytes], listener: Listener) -> None:
        self.proc = proc
        self.out = b""
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=listener.listen, args=(proc.stderr,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        self.out = self.proc.stdout.read()

    def join(self) -> None:
        """Wait for both streams to end (the process has ended), then close them."""
        for thread in self._threads:
            thread.join()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
