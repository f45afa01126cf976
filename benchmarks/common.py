"""What the benchmark scripts share: where their results go, and writing them there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

__all__ = ["RESULTS", "write_results"]


def write_results(name: str, value: Any) -> Path:
    """Write `value` as indented JSON to benchmarks/results/NAME, say so, and return the path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / name
    out.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")
    return out
