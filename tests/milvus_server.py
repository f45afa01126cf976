"""A real Milvus server for tests: `milvus-lite server`, the gRPC server Milvus Lite ships, on a
free port with its data in a temp dir. The store speaks to it over the network exactly as it
would to a Milvus standalone (`http://host:port`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.browser import free_port, stop


@contextmanager
def milvus_lite_server(data_dir: Path, timeout_s: float = 60) -> Iterator[str]:
    """Start the server, wait until it answers, yield its URI; stop it on the way out."""
    exe = shutil.which("milvus-lite", path=str(Path(sys.executable).parent)) or "milvus-lite"
    port = free_port()
    log = (data_dir.parent / f"milvus-server-{port}.log").open("w")
    process = subprocess.Popen(
        [exe, "server", "--data-dir", str(data_dir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        _wait(uri, process, timeout_s)
        yield uri
    finally:
        stop(process)
        log.close()


def _wait(uri: str, process: subprocess.Popen, timeout_s: float) -> None:
    from pymilvus import MilvusClient

    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"milvus-lite server exited with {process.returncode}")
        try:
            client = MilvusClient(uri=uri, timeout=2)
            client.list_collections()
            client.close()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
