"""The debug log: where a traceback goes instead of a user's screen.

Front ends (the CLI, the app) call `debug_log(home)` once: Zhixing's own loggers (`core.*`,
`cli.*`, `app.*`) then write everything from DEBUG up to `<home>/logs/zhixing.log` (rotated at 1 MB,
three kept), through a filter that removes anything shaped like an API key. A user sees one
sentence; the sentence says the details are here.
"""

from __future__ import annotations

import logging
import logging.handlers
import threading
from pathlib import Path

__all__ = ["close_debug_log", "debug_log", "log_path"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"
_lock = threading.Lock()
_installed: dict[Path, logging.Handler] = {}


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        from core.llm.retry import redact

        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class _QuietFileHandler(logging.handlers.RotatingFileHandler):
    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - stdlib name
        pass  # a full disk must not turn the debug log into a traceback on the user's screen


def log_path(home: Path) -> Path:
    return Path(home) / "logs" / "zhixing.log"


def debug_log(home: Path) -> Path | None:
    """Send Zhixing's log records to the home's debug log (once per home); its path, or None
    when the home cannot hold one (a read-only home still works, without a log)."""
    path = log_path(home)
    with _lock:
        if path in _installed:
            return path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = _QuietFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
        except OSError:
            return None
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler.addFilter(_Redact())
        for name in ("core", "app", "cli"):
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
                logger.setLevel(logging.DEBUG)
        _installed[path] = handler
        return path


def close_debug_log(path: Path) -> None:
    """Stop sending records to a debug log `debug_log` opened (a command that has finished)."""
    with _lock:
        handler = _installed.pop(path, None)
        if handler is None:
            return
        for name in ("core", "app", "cli"):
            logging.getLogger(name).removeHandler(handler)
        handler.close()
