"""The exception hierarchy: every error a user sees is one of these, with one clear sentence."""

from __future__ import annotations

__all__ = [
    "AccessError",
    "BuildBusyError",
    "ConfigError",
    "InternalError",
    "LLMError",
    "LLMOutputError",
    "NotFoundError",
    "ParseError",
    "StoreError",
    "StoreLockedError",
    "ZhixingError",
    "internal_error",
]


class ZhixingError(Exception):
    """Base class: the message is one sentence a user can act on."""


class ConfigError(ZhixingError):
    """A setting is missing or has a value Zhixing cannot use."""


class ParseError(ZhixingError):
    """A document could not be read; the message says why (and where, for a corpus line)."""


class StoreError(ZhixingError):
    """The catalog or the vector store refused an operation."""


class StoreLockedError(StoreError):
    """The Milvus Lite file is held by another process."""


class NotFoundError(ZhixingError):
    """A knowledge base, document or entity that was named does not exist."""


class LLMError(ZhixingError):
    """The LLM endpoint failed or could not be reached."""


class LLMOutputError(LLMError):
    """The LLM answered, but not in the requested shape."""


class BuildBusyError(ZhixingError):
    """A knowledge base already has a build running: in this process (the jobs' list, the
    build lock) or in another live one (its job row: `job_id`, `pid`)."""

    def __init__(self, message: str, *, job_id: int | None = None, pid: int | None = None):
        super().__init__(message)
        self.job_id, self.pid = job_id, pid


class AccessError(ZhixingError):
    """The current user may not do this."""


class InternalError(ZhixingError):
    """Zhixing itself failed (a bug): the message says what failed and where, in one sentence;
    the traceback is in the debug log (core.logs)."""


def internal_error(exc: BaseException, doing: str) -> InternalError:
    """Word an unexpected exception as one sentence: what was being done, and what broke."""
    detail = " ".join(str(exc).split())[:200]
    what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return InternalError(
        f"Zhixing failed while {doing} ({what}); nothing already stored was lost, and the"
        " details are in the debug log."
    )
