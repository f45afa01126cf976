"""The built-in embedder under concurrent use: a query is not stuck behind a build's batch."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest


def test_slices_give_the_same_vectors_as_one_pass(embedder):
    texts = [f"条款 {i}: 应对输入进行校验 input validation rule {i}" for i in range(70)]
    sliced = embedder.embed(texts)
    whole = np.asarray(embedder._load().encode(texts), dtype=np.float32)
    assert sliced.shape == (70, 512)
    assert np.allclose(sliced, whole, atol=1e-5)


@pytest.mark.slow
def test_a_short_request_goes_before_the_rest_of_a_long_one(embedder):
    embedder.embed(["warm up"])
    bulk = [f"document {i} about firewalls, ciphers and audit logs " * 8 for i in range(24 * 16)]
    finished: dict[str, float] = {}

    def build() -> None:
        embedder.embed(bulk)
        finished["build"] = time.perf_counter()

    worker = threading.Thread(target=build)
    worker.start()
    time.sleep(0.3)  # the build is into its slices
    started = time.perf_counter()
    embedder.embed(["how do I configure the firewall?"])
    finished["query"] = time.perf_counter()
    worker.join()
    assert finished["query"] < finished["build"]
    # It waited for one slice at most, not for the whole batch.
    assert finished["query"] - started < (finished["build"] - started) / 4
