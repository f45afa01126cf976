"""The health of a home's parts, for a service manager's probe (`zhixing health`).

Each configured part is checked once, cheaply, with a short timeout: the catalog (opened
read-only, one query: a SQLite file, or the PostgreSQL database of ZHIXING_CATALOG_URI, whose
catalog tables must be there), the vector store (the Milvus Lite file or the Milvus server: opened, its
collections counted) and the LLM endpoint when one is configured (GET /models). Nothing is
created or written: a misspelt home is reported missing, not made.

Milvus Lite lets one process open its file. While the app (or any command) serves the home, a
probe from another process cannot open it: that is `HELD`, the expected state of a running
app's store, and healthy. The probe tries the file's lock without taking it first, so it never
starts a second Milvus Lite that would fail and print its own traceback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .config import Settings
from .errors import ConfigError, LLMError, StoreError, StoreLockedError
from .llm.probe import list_models
from .llm.retry import DEFAULT_BASE_URL, public_url
from .store.sqlite import count_tables
from .store.vectors import count_collections

__all__ = ["PARTS", "Check", "Health", "Status", "check_health"]

# A probe runs every few seconds to minutes and must answer before the service manager gives
# up on it (systemd's default start timeout is 90 s, a container's probe often 1-5 s): a
# refused port fails at once, a silent host after these.
_CATALOG_TIMEOUT_S = 2.0
_STORE_TIMEOUT_S = 5.0
_LLM_TIMEOUT_S = 3.0


class Status(StrEnum):
    OK = "ok"
    HELD = "held"  # the Milvus Lite file is open in another process: in use, not broken
    SKIPPED = "skipped"  # not configured (no LLM endpoint), or left out on request
    FAILING = "failing"


PARTS = ("catalog", "vectors", "llm")


@dataclass(frozen=True)
class Check:
    """One part's state, in one sentence, and how long finding it out took."""

    part: str
    status: Status
    message: str
    seconds: float

    @property
    def healthy(self) -> bool:
        return self.status is not Status.FAILING

    def to_json(self) -> dict[str, object]:
        return {"status": str(self.status), "message": self.message, "seconds": self.seconds}


@dataclass(frozen=True)
class Health:
    checks: tuple[Check, ...]

    @property
    def healthy(self) -> bool:
        """Every part checked is usable (held and skipped parts count as usable)."""
        return all(check.healthy for check in self.checks)

    def to_json(self) -> dict[str, object]:
        return {
            "healthy": self.healthy,
            "checks": {check.part: check.to_json() for check in self.checks},
        }


def check_health(settings: Settings, *, skip: Sequence[str] = ()) -> Health:
    """Check the catalog, the vector store and the LLM endpoint, leaving out `skip`'s parts."""
    unknown = sorted(set(skip) - set(PARTS))
    if unknown:
        raise ConfigError(f"Unknown part(s) {', '.join(unknown)}; use {', '.join(PARTS)}.")
    probes: dict[str, Callable[[Settings], tuple[Status, str]]] = {
        "catalog": _catalog,
        "vectors": _vectors,
        "llm": _llm,
    }
    checks = []
    for part in PARTS:
        if part in skip:
            checks.append(Check(part, Status.SKIPPED, f"The {part} check was skipped.", 0.0))
            continue
        started = time.monotonic()
        status, message = probes[part](settings)
        checks.append(Check(part, status, message, round(time.monotonic() - started, 3)))
    return Health(tuple(checks))


def _catalog(settings: Settings) -> tuple[Status, str]:
    target = settings.catalog_target
    if isinstance(target, str):
        return _postgres_catalog(target)
    path = target
    try:
        tables = count_tables(path, timeout_s=_CATALOG_TIMEOUT_S)
    except StoreError as exc:
        return Status.FAILING, str(exc)
    if not tables:
        return Status.FAILING, f"The catalog at {path} holds no tables; it is not a Zhixing home."
    return Status.OK, f"The catalog at {path} answers ({tables} tables)."


def _postgres_catalog(uri: str) -> tuple[Status, str]:
    from .store.postgres import catalog_tables, redacted  # psycopg only for a Postgres catalog

    try:
        tables = catalog_tables(uri, timeout_s=_CATALOG_TIMEOUT_S)
    except StoreError as exc:
        return Status.FAILING, str(exc)
    where = redacted(uri)
    if "knowledge_bases" not in tables:
        return Status.FAILING, (
            f"The database at {where} holds no Zhixing catalog; check ZHIXING_CATALOG_URI, or"
            " open the home once (the app or any `zhixing` command) to create it."
        )
    return Status.OK, f"The catalog at {where} answers ({len(tables)} tables)."


def _vectors(settings: Settings) -> tuple[Status, str]:
    uri = settings.resolved_milvus_uri
    where = "Milvus Lite file" if settings.milvus_is_lite else "Milvus server"
    try:
        count = count_collections(uri, settings.milvus_token, timeout_s=_STORE_TIMEOUT_S)
    except StoreLockedError as exc:
        return Status.HELD, str(exc)
    except StoreError as exc:
        return Status.FAILING, str(exc)
    noun = "collection" if count == 1 else "collections"
    return Status.OK, f"The {where} at {uri} answers ({count} {noun})."


def _llm(settings: Settings) -> tuple[Status, str]:
    if not settings.llm_configured:
        return Status.SKIPPED, "No LLM endpoint is configured (offline mode)."
    base_url = settings.openai_base_url or DEFAULT_BASE_URL
    try:
        models = list_models(base_url, settings.openai_api_key, timeout_s=_LLM_TIMEOUT_S)
    except LLMError as exc:
        return Status.FAILING, str(exc)
    url = public_url(base_url)
    if models is None:
        return Status.OK, f"The LLM endpoint at {url} answers (it does not list its models)."
    listed = "among them" if settings.chat_model in models else "not among them"
    return Status.OK, (
        f"The LLM endpoint at {url} answers and lists {len(models)} model(s),"
        f" {settings.chat_model} {listed}."
    )
