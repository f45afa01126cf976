"""pyproject.toml keeps ranges capped below the next major; constraints.txt pins the tested
point of every one of them (and of what they need), inside its range."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# Calendar versions have no major to cap: a year is not a promise of breakage.
CALENDAR = {"regex"}


def _declared() -> list[Requirement]:
    lines = PROJECT["dependencies"] + [
        line for extra in PROJECT["optional-dependencies"].values() for line in extra
    ]
    return [Requirement(line) for line in lines if not line.startswith("zhixing")]


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not a pin: {line!r}"
            assert canonicalize_name(name) not in pins, f"pinned twice: {name}"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_dependency_is_capped_below_a_version_it_has_not_been_tested_on() -> None:
    uncapped = [
        str(req)
        for req in _declared()
        if canonicalize_name(req.name) not in CALENDAR
        and not any(spec.operator in ("<", "==") for spec in req.specifier)
    ]
    assert not uncapped, f"no upper bound: {uncapped}"


def test_the_constraints_pin_every_dependency_inside_its_range() -> None:
    pins = _pins()
    outside = {
        str(req): str(pins.get(canonicalize_name(req.name)))
        for req in _declared()
        if pins.get(canonicalize_name(req.name)) not in req.specifier
    }
    assert not outside, f"pinned outside the range (or not pinned): {outside}"


def test_the_constraints_pin_what_the_dependencies_need_and_not_what_was_dropped() -> None:
    pins = _pins()
    # Transitive requirements are there too, and both faces of the OpenCV swap (Makefile).
    assert {"langchain-core", "grpcio", "onnxruntime", "opencv-python-headless"} <= set(pins)
    assert pins["opencv-python"] == pins["opencv-python-headless"]
    assert "sqlite-utils" not in pins  # the catalog is the stdlib's sqlite3 (core/store/sqlite.py)
