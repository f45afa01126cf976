"""Settings: the only place that reads the environment (docs/architecture.md §2).

`Settings.from_env()` is called once, when the CLI or the app starts; nothing reads the
environment at import time. Tests build `Settings(...)` directly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError

__all__ = [
    "BUILTIN_EMBEDDINGS",
    "LANGUAGES",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "SAVED_KEYS",
    "STRUCTURED_OUTPUT",
    "Settings",
    "load_saved",
    "save_settings",
]

# The built-in embedding models by their ZHIXING_EMBEDDING name (core/embed.py); any other
# embedding is `openai:<model>`.
BUILTIN_EMBEDDINGS = ("builtin", "e5-small")

# What the settings page may save: the LLM and embedding variables of docs/architecture.md §2.
SAVED_KEYS = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ZHIXING_CHAT_MODEL",
    "ZHIXING_FAST_MODEL",
    "ZHIXING_EMBEDDING",
    "ZHIXING_LLM_CONCURRENCY",
    "ZHIXING_STRUCTURED_OUTPUT",
)
SETTINGS_FILE = "settings.json"

# auto: what the endpoint is found to honour (core/llm/capabilities.py); the others force one.
STRUCTURED_OUTPUT = ("auto", "json_schema", "function_calling", "json_mode")
LANGUAGES = ("auto", "zh", "en")  # ZHIXING_LANGUAGE: the app's default; "auto" = the browser's
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")  # ZHIXING_LOG_LEVEL (core/logs.py)
LOG_FORMATS = ("text", "json")  # ZHIXING_LOG_FORMAT: json = one object a line, for a collector


CATALOG_SCHEMES = ("postgresql://", "postgres://", "sqlite://")


@dataclass(frozen=True)
class Settings:
    home: Path = Path("data")
    milvus_uri: str = ""  # empty = Milvus Lite file under home
    # ZHIXING_CATALOG_URI: empty = catalog.db under home; postgresql://... = a catalog on
    # PostgreSQL (core/store/postgres.py); sqlite:///path = a SQLite file elsewhere. It may hold
    # a password: never shown.
    catalog_uri: str = field(default="", repr=False)
    milvus_token: str = field(default="", repr=False)
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    chat_model: str = "gpt-4o-mini"
    fast_model: str = ""
    embedding: str = "builtin"
    llm_concurrency: int = 8
    structured_output: str = "auto"
    # A model at the same endpoint that takes images (ZHIXING_VISION_MODEL): it reads each page
    # OCR read, and its text replaces OCR's only where it keeps OCR's words (core/build/vision.py);
    # empty = OCR alone.
    vision_model: str = ""
    # Logins are required (ZHIXING_AUTH=required): `zhixing serve` sets it on a non-loopback
    # address; localhost needs none (docs/architecture.md §10).
    auth_required: bool = False
    # The app's language for whoever has not picked one (ZHIXING_LANGUAGE): "zh", "en", or
    # "auto" = the browser's.
    language: str = "auto"
    # Opt-in LangSmith tracing (ZHIXING_LANGSMITH_TRACING=true): off, no trace leaves the
    # machine whatever LANGSMITH_TRACING says; on, runs go to ZHIXING_LANGSMITH_PROJECT at the
    # endpoint and with the key of LangSmith's own LANGSMITH_ENDPOINT and LANGSMITH_API_KEY.
    langsmith_tracing: bool = False
    langsmith_project: str = "zhixing"
    # Chunks a build embeds and stores at a time (ZHIXING_EMBED_BATCH): each batch is a point a
    # killed build resumes from; a smaller one holds less in memory and saves more often.
    embed_batch: int = 256
    # Build and search knobs (not environment contract, but settable for tests and benchmarks).
    chunk_units: int = 800
    chunk_overlap_units: int = 80
    parse_workers: int = 0  # 0 = number of cores
    # How long a build waits, paused, for an LLM endpoint that cannot be reached before it
    # stops (resumable with `zhixing resume`).
    llm_max_pause_s: float = 1800.0
    # Uploads bigger than this are refused before staging; .streamlit/config.toml's
    # server.maxUploadSize says the same to the browser.
    max_upload_mb: int = 200
    # The logs' threshold (ZHIXING_LOG_LEVEL): empty = each log's own, DEBUG for the debug log
    # and INFO for --verbose; set, it is both's. ZHIXING_LOG_FORMAT=json writes each record as
    # one JSON object a line (core/logs.py).
    log_level: str = ""
    log_format: str = "text"

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUT:
            raise ConfigError(
                f"ZHIXING_STRUCTURED_OUTPUT is {self.structured_output!r}; "
                f"use one of {', '.join(STRUCTURED_OUTPUT)}."
            )
        if self.catalog_uri and not self.catalog_uri.startswith(CATALOG_SCHEMES):
            raise ConfigError(
                "ZHIXING_CATALOG_URI must start with postgresql:// (a catalog on PostgreSQL) or"
                " sqlite:/// (a SQLite file); unset it for the home's own catalog.db."
            )
        if self.llm_concurrency < 1:
            raise ConfigError("ZHIXING_LLM_CONCURRENCY must be a positive integer.")
        if self.embed_batch < 1:
            raise ConfigError("ZHIXING_EMBED_BATCH must be a positive integer.")
        if self.language not in LANGUAGES:
            raise ConfigError(
                f"ZHIXING_LANGUAGE is {self.language!r}; use one of {', '.join(LANGUAGES)}."
            )
        if self.log_level and self.log_level not in LOG_LEVELS:
            raise ConfigError(
                f"ZHIXING_LOG_LEVEL is {self.log_level!r}; use one of {', '.join(LOG_LEVELS)}."
            )
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(
                f"ZHIXING_LOG_FORMAT is {self.log_format!r}; use one of {', '.join(LOG_FORMATS)}."
            )
        if self.vision_model and not self.llm_configured:
            raise ConfigError(
                f"ZHIXING_VISION_MODEL is {self.vision_model!r} but no endpoint is configured;"
                " set OPENAI_BASE_URL (or OPENAI_API_KEY), or leave ZHIXING_VISION_MODEL empty."
            )
        if not (self.embedding in BUILTIN_EMBEDDINGS or self.embedding.startswith("openai:")):
            raise ConfigError(
                f"ZHIXING_EMBEDDING is {self.embedding!r}; use 'builtin', 'e5-small' or "
                "'openai:<model>'."
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the ZHIXING_* and OPENAI_* variables (docs/architecture.md §2).

        A variable that is not set falls back to what the settings page saved in
        `$ZHIXING_HOME/settings.json` (same names), then to the default: the environment wins.
        """
        env = os.environ if env is None else env
        home = Path(env.get("ZHIXING_HOME") or "data")
        env = {**load_saved(home), **{k: v for k, v in env.items() if v}}
        llm_concurrency = _count(env, "ZHIXING_LLM_CONCURRENCY", 8)
        chat_model = env.get("ZHIXING_CHAT_MODEL") or "gpt-4o-mini"
        tracing = _switch(env, "ZHIXING_LANGSMITH_TRACING")
        if tracing and not any(
            env.get(name)
            for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT")
        ):
            raise ConfigError(
                "ZHIXING_LANGSMITH_TRACING is on but LangSmith has no key: set LANGSMITH_API_KEY"
                " (and LANGSMITH_ENDPOINT for a self-hosted LangSmith), or turn tracing off."
            )
        return cls(
            home=home,
            milvus_uri=env.get("ZHIXING_MILVUS_URI", ""),
            catalog_uri=env.get("ZHIXING_CATALOG_URI", "").strip(),
            milvus_token=env.get("ZHIXING_MILVUS_TOKEN", ""),
            openai_api_key=env.get("OPENAI_API_KEY", ""),
            openai_base_url=env.get("OPENAI_BASE_URL", ""),
            chat_model=chat_model,
            fast_model=env.get("ZHIXING_FAST_MODEL") or chat_model,
            embedding=env.get("ZHIXING_EMBEDDING") or "builtin",
            llm_concurrency=llm_concurrency,
            structured_output=env.get("ZHIXING_STRUCTURED_OUTPUT") or "auto",
            vision_model=(env.get("ZHIXING_VISION_MODEL") or "").strip(),
            auth_required=env.get("ZHIXING_AUTH", "").lower() == "required",
            language=(env.get("ZHIXING_LANGUAGE") or "auto").strip().lower(),
            langsmith_tracing=tracing,
            langsmith_project=env.get("ZHIXING_LANGSMITH_PROJECT") or "zhixing",
            embed_batch=_count(env, "ZHIXING_EMBED_BATCH", 256),
            log_level=(env.get("ZHIXING_LOG_LEVEL") or "").strip().upper(),
            log_format=(env.get("ZHIXING_LOG_FORMAT") or "text").strip().lower(),
        )

    @property
    def llm_configured(self) -> bool:
        """An endpoint is configured when a key or a base URL is set (local servers need no key)."""
        return bool(self.openai_api_key or self.openai_base_url)

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.db"

    @property
    def catalog_target(self) -> Path | str:
        """Where the catalog is: a `postgresql://` URI, else the path of its SQLite file."""
        if self.catalog_uri.startswith("sqlite://"):
            return Path(self.catalog_uri.removeprefix("sqlite://"))
        return self.catalog_uri or self.catalog_path

    @property
    def catalog_on_postgres(self) -> bool:
        return self.catalog_uri.startswith(("postgresql://", "postgres://"))

    @property
    def conversations_target(self) -> Path | str:
        """Where the agents' checkpoints are: the Postgres catalog's database, where every
        process of a team's home sees them, else `conversations.sqlite` in the home."""
        return self.catalog_uri if self.catalog_on_postgres else self.home / "conversations.sqlite"

    @property
    def resolved_milvus_uri(self) -> str:
        return self.milvus_uri or str(self.home / "milvus.db")

    @property
    def milvus_is_lite(self) -> bool:
        uri = self.resolved_milvus_uri
        return not uri.startswith(("http://", "https://", "tcp://", "grpc://"))

    @property
    def workers(self) -> int:
        return self.parse_workers or (os.cpu_count() or 1)


_ON = ("true", "1", "yes", "on")
_OFF = ("false", "0", "no", "off", "")


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name} is {value!r}; it must be a positive integer.") from None


def _switch(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ConfigError(f"{name} is {value!r}; use true or false.")


def load_saved(home: Path) -> dict[str, str]:
    """The settings saved in a home (only SAVED_KEYS), or {} when there are none."""
    path = Path(home) / SETTINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); fix or delete it.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object; fix or delete it.")
    return {k: str(v) for k, v in data.items() if k in SAVED_KEYS and v not in (None, "")}


def save_settings(home: Path, values: Mapping[str, str]) -> Settings:
    """Validate and save settings for a home; return the Settings they give.

    Empty values are dropped (the default applies). The file holds the API key, so it is
    written readable by its owner only, and atomically: a failed save leaves the old file.
    """
    clean = {k: str(v).strip() for k, v in values.items() if k in SAVED_KEYS and str(v).strip()}
    settings = Settings.from_env({"ZHIXING_HOME": str(home), **clean})  # validates
    home = Path(home)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = home / f".{SETTINGS_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(clean, out, ensure_ascii=False, indent=2)
    os.replace(tmp, home / SETTINGS_FILE)
    return settings
