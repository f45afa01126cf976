"""OpenAIEmbedder over real HTTP against the fake server's /v1/embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fake_openai import FakeOpenAI
from zhixing.core.config import Settings
from zhixing.core.embed import Embedder
from zhixing.core.errors import ConfigError, LLMError
from zhixing.core.llm import OpenAIEmbedder

KEY = "sk-embed-0123456789SECRET"


def embedder_for(fake: FakeOpenAI, **kwargs: object) -> OpenAIEmbedder:
    settings = Settings(openai_base_url=fake.url, openai_api_key=KEY, embedding="openai:bge-m3")
    return OpenAIEmbedder(settings, backoff_s=0.01, timeout_s=1.0, **kwargs)  # type: ignore[arg-type]


def test_the_embedder_returns_normalized_vectors_of_the_servers_dimension() -> None:
    with FakeOpenAI(dimension=48) as fake:
        embedder = embedder_for(fake)
        assert embedder.name == "openai:bge-m3"
        assert embedder.dimension == 48  # probed with one request
        vectors = embedder.embed(["SQL injection", "SQL注入 防护", "SQL injection"])
        assert fake.bodies("/v1/embeddings")[-1]["model"] == "bge-m3"
    assert vectors.shape == (3, 48) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2])
    assert isinstance(embedder, Embedder)


def test_the_embedder_sends_batches_and_keeps_empty_texts_in_place() -> None:
    with FakeOpenAI() as fake:
        embedder = embedder_for(fake, batch_size=4)
        vectors = embedder.embed([f"text {i}" for i in range(9)] + [""])
        sizes = [len(b["input"]) for b in fake.bodies("/v1/embeddings")]
        assert all(text.strip() for b in fake.bodies("/v1/embeddings") for text in b["input"])
    assert sizes == [4, 4, 2]
    assert vectors.shape == (10, 32)
    assert embedder.embed([]).shape == (0, 32)


def test_the_embedder_retries_transient_failures() -> None:
    with FakeOpenAI() as fake:
        embedder = embedder_for(fake, dimension=32)
        fake.fail("503", "429")
        assert embedder.embed(["hello"]).shape == (1, 32)
        assert fake.embedding_count == 3
    assert embedder.stats.snapshot()["retries"] == 2


def test_a_down_embedding_server_raises_llm_error_naming_the_url() -> None:
    with FakeOpenAI() as fake:
        embedder = embedder_for(fake, dimension=32, max_attempts=2)
    with pytest.raises(LLMError, match="could not be reached") as info:
        embedder.embed(["hello"])
    assert fake.url in str(info.value) and KEY not in str(info.value)


def test_an_embedder_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ZHIXING_EMBEDDING=openai:<model>"):
        OpenAIEmbedder(Settings(openai_base_url="http://127.0.0.1:1/v1"))
