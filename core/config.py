"""Settings: the only place that reads the environment (DESIGN §2).

`Settings.from_env()` is called once, when the CLI or the app starts; nothing reads the
environment at import time. Tests build `Settings(...)` directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.errors import ConfigError

__all__ = ["Settings"]

_STRUCTURED_OUTPUT = ("json_schema", "function_calling", "json_mode")


@dataclass(frozen=True)
class Settings:
    home: Path = Path("data")
    milvus_uri: str = ""  # empty = Milvus Lite file under home
    milvus_token: str = field(default="", repr=False)
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    chat_model: str = "gpt-4o-mini"
    fast_model: str = ""
    embedding: str = "builtin"
    llm_concurrency: int = 8
    structured_output: str = "json_schema"
    # Build and search knobs (not environment contract, but settable for tests and benchmarks).
    chunk_units: int = 800
    chunk_overlap_units: int = 80
    embed_batch: int = 256
    parse_workers: int = 0  # 0 = number of cores

    def __post_init__(self) -> None:
        if self.structured_output not in _STRUCTURED_OUTPUT:
            raise ConfigError(
                f"ZHIXING_STRUCTURED_OUTPUT is {self.structured_output!r}; "
                f"use one of {', '.join(_STRUCTURED_OUTPUT)}."
            )
        if self.llm_concurrency < 1:
            raise ConfigError("ZHIXING_LLM_CONCURRENCY must be a positive integer.")
        if not (self.embedding == "builtin" or self.embedding.startswith("openai:")):
            raise ConfigError(
                f"ZHIXING_EMBEDDING is {self.embedding!r}; use 'builtin' or 'openai:<model>'."
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the ZHIXING_* and OPENAI_* variables (DESIGN §2)."""
        env = os.environ if env is None else env
        concurrency = env.get("ZHIXING_LLM_CONCURRENCY", "8")
        try:
            llm_concurrency = int(concurrency)
        except ValueError:
            raise ConfigError(
                f"ZHIXING_LLM_CONCURRENCY is {concurrency!r}; it must be a positive integer."
            ) from None
        chat_model = env.get("ZHIXING_CHAT_MODEL") or "gpt-4o-mini"
        return cls(
            home=Path(env.get("ZHIXING_HOME") or "data"),
            milvus_uri=env.get("ZHIXING_MILVUS_URI", ""),
            milvus_token=env.get("ZHIXING_MILVUS_TOKEN", ""),
            openai_api_key=env.get("OPENAI_API_KEY", ""),
            openai_base_url=env.get("OPENAI_BASE_URL", ""),
            chat_model=chat_model,
            fast_model=env.get("ZHIXING_FAST_MODEL") or chat_model,
            embedding=env.get("ZHIXING_EMBEDDING") or "builtin",
            llm_concurrency=llm_concurrency,
            structured_output=env.get("ZHIXING_STRUCTURED_OUTPUT") or "json_schema",
        )

    def with_home(self, home: Path) -> Settings:
        return replace(self, home=Path(home))

    @property
    def llm_configured(self) -> bool:
        """An endpoint is configured when a key or a base URL is set (local servers need no key)."""
        return bool(self.openai_api_key or self.openai_base_url)

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.db"

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
