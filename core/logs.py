"""The debug log: where a traceback goes instead of a user's screen.

Front ends (the CLI, the app) call `debug_log(home)` once: Zhixing's own loggers (`zhixing.*`:
core, cli and app) then write everything from DEBUG up to `<home>/logs/zhixing.log` (rotated at 1 MB,
three kept), through a filter that removes anything shaped like an API key. A user sees one
sentence; the sentence says the details are here.

`verbose_log(stream)` shows the same records from INFO up as they happen (`zhixing --verbose`):
retries and their waits, repaired or salvaged model replies, fallbacks, and how long each model
call, search and build stage took.

Both take the settings' `log_level` (ZHIXING_LOG_LEVEL: their threshold instead of DEBUG and
INFO) and, with `as_json` (ZHIXING_LOG_FORMAT=json), write each record as one JSON object a line
(`time`, `level`, `logger`, `message`, `exception`) for a log collector; the key filter runs
before either format.
"""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from .home import private_dir, private_file

__all__ = ["close_debug_log", "close_verbose_log", "debug_log", "log_path", "verbose_log"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"
_LOGGERS = ("zhixing",)
_lock = threading.Lock()
_installed: dict[Path, logging.Handler] = {}


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from .llm.retry import redact

        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class _JsonLines(logging.Formatter):
    """One JSON object a record: what a log collector (journald's, a container's) parses."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "exception": record.exc_text or None,
        }
        return json.dumps(entry, ensure_ascii=False)


class _QuietFileHandler(logging.handlers.RotatingFileHandler):
    def _open(self) -> io.TextIOWrapper:
        # Owner-only whatever the umask, and so is each file a rotation starts.
        private_file(Path(self.baseFilename))
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - stdlib name
        pass  # a full disk must not turn the debug log into a traceback on the user's screen


def log_path(home: Path) -> Path:
    return Path(home) / "logs" / "zhixing.log"


def debug_log(home: Path, *, level: str = "", as_json: bool = False) -> Path | None:
    """Send Zhixing's log records from `level` up (default DEBUG) to the home's debug log (once
    per home); its path, or None when the home cannot hold one (a read-only home still works,
    without a log)."""
    path = log_path(home)
    with _lock:
        if path in _installed:
            return path
        try:
            private_dir(path.parent)
            handler = _QuietFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
        except OSError:
            return None
        handler.setLevel(level or logging.DEBUG)
        handler.setFormatter(_JsonLines() if as_json else logging.Formatter(_FORMAT))
        handler.addFilter(_Redact())
        _attach(handler)
        _installed[path] = handler
        return path


def verbose_log(stream: TextIO, *, level: str = "", as_json: bool = False) -> logging.Handler:
    """Show Zhixing's records from `level` up (default INFO) on `stream` (a terminal's stderr),
    one short line each; `close_verbose_log` stops it."""
    handler = logging.StreamHandler(stream)
    handler.setLevel(level or logging.INFO)
    # On a terminal a line starts by wiping the progress bar it would otherwise run into.
    wipe = "\r\x1b[K" if stream.isatty() and not as_json else ""
    short = logging.Formatter(wipe + "zhixing %(asctime)s %(message)s", "%H:%M:%S")
    handler.setFormatter(_JsonLines() if as_json else short)
    handler.addFilter(_Redact())
    with _lock:
        _attach(handler)
    return handler


def close_verbose_log(handler: logging.Handler) -> None:
    with _lock:
        for name in _LOGGERS:
            logging.getLogger(name).removeHandler(handler)
    handler.close()


def _attach(handler: logging.Handler) -> None:
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        if logger.level == logging.NOTSET or logger.level > handler.level:
            logger.setLevel(handler.level)


def close_debug_log(path: Path) -> None:
    """Stop sending records to a debug log `debug_log` opened (a command that has finished)."""
    with _lock:
        handler = _installed.pop(path, None)
        if handler is None:
            return
        for name in _LOGGERS:
            logging.getLogger(name).removeHandler(handler)
        handler.close()
