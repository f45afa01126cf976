"""Write constraints.txt: the versions installed in this environment of everything
`zhixing[dev]` needs, transitively (`make constraints`, after `make test` passed on them).

Unlike `pip freeze`, it leaves out what the environment holds for no requirement of Zhixing's
(a package an earlier version needed, a developer's tool). Markers are evaluated for this
interpreter and platform, so the file pins what the tests ran on: Linux, Python 3.11.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
HEADER = """\
# The versions `make test` passed with (Python {python}, Linux), for `pip install -c`:
# `make install` and docs/deploy/Containerfile use it. Written by `make constraints`
# (tests/freeze_constraints.py) from the environment the tests ran in; pyproject.toml keeps
# the ranges, this file the tested point.
"""
# The Makefile swaps opencv-python (rapidocr's requirement) for the same cv2 without libGL:
# both are pinned, to one version.
SWAPPED = {"opencv-python": "opencv-python-headless"}


def requirements(name: str, extras: set[str]) -> list[Requirement]:
    """What an installed distribution requires with these extras, on this interpreter."""
    found = []
    for line in metadata.distribution(name).requires or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
            found.append(req)
    return found


def closure(root: str, extras: set[str]) -> dict[str, str]:
    """Every distribution `root[extras]` needs, transitively: name -> installed version."""
    seen: dict[str, set[str]] = {}
    pending = [(root, extras)]
    while pending:
        name, wanted = pending.pop()
        key = canonicalize_name(name)
        if key in seen and wanted <= seen[key]:
            continue
        seen[key] = seen.get(key, set()) | wanted
        try:
            pending += [(r.name, set(r.extras)) for r in requirements(name, wanted)]
        except metadata.PackageNotFoundError:
            swapped = SWAPPED.get(key)
            if swapped is None:
                raise SystemExit(
                    f"{name} is required but not installed; run `make install`."
                ) from None
            seen[canonicalize_name(swapped)] = set()
    seen.pop(canonicalize_name(root))
    versions = {k: metadata.version(k) for k in seen if k not in SWAPPED}
    for original, swapped in SWAPPED.items():
        if swapped in versions:
            versions[original] = versions[swapped]
    return versions


def main() -> None:
    versions = closure("zhixing", {"dev", "e5"})
    python = ".".join(map(str, sys.version_info[:2]))
    lines = [f"{name}=={version}" for name, version in sorted(versions.items())]
    (ROOT / "constraints.txt").write_text(HEADER.format(python=python) + "\n".join(lines) + "\n")
    print(f"constraints.txt: {len(lines)} pins")


if __name__ == "__main__":
    main()
