"""Turn the paths a user gives into work units: one per document, with its content hash.

A file is one document; a `.jsonl` corpus is one document per line. Units are produced lazily,
so a corpus of a hundred thousand lines is never held in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError
from ..ingest import detect_kind, iter_jsonl, parse_file, sanitize_name
from ..models import ParsedDocument
from .events import ItemFailure

__all__ = ["Unit", "collect_files", "count_units", "iter_units"]


@dataclass(frozen=True)
class Unit:
    """One document to build: its name, content hash, and how to parse it."""

    source: str
    sha256: str
    kind: str
    load: Callable[[], ParsedDocument]
    path: Path | None = None  # the file, for a reader that goes back to it (not a corpus line)


def collect_files(paths: Sequence[Path]) -> tuple[list[tuple[Path, str]], list[ItemFailure]]:
    """Expand files and folders (recursively) into (path, source name) pairs.

    A file given directly is named by its file name; a file inside a given folder by its path
    relative to that folder, so two `README.md` in different subfolders stay apart.
    """
    files: list[tuple[Path, str]] = []
    failures: list[ItemFailure] = []
    seen: set[str] = set()

    def take(path: Path, source: str) -> None:
        if source in seen:
            failures.append(
                ItemFailure(source, f"{source}: another file in this add has the same name.")
            )
            return
        seen.add(source)
        files.append((path, source))

    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if child.is_file() and not any(p.startswith((".", "~$")) for p in rel.parts):
                    take(child, "/".join(sanitize_name(p) for p in rel.parts))
        elif path.is_file():
            take(path, sanitize_name(path.name))
        else:
            name = sanitize_name(path.name)
            failures.append(ItemFailure(name, f"{path} does not exist or is not a regular file."))
    return files, failures


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def count_units(files: Sequence[tuple[Path, str]]) -> int:
    """Count documents up front (a corpus counts its non-blank lines) for progress and ETA."""
    total = 0
    for path, _ in files:
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            with path.open("rb") as handle:
                total += sum(1 for line in handle if line.strip()) or 1
        else:
            total += 1
    return total


def iter_units(
    files: Sequence[tuple[Path, str]], *, workers: int = 1
) -> Iterator[Unit | ItemFailure]:
    """Yield a unit for each document, or a failure for a corpus line that cannot be read.

    A file that cannot be read (empty, binary, mislabelled, unreadable) is a unit too, whose
    `load` raises its ParseError: the pipeline lists it among the knowledge base's documents as
    `failed`, with that sentence, as it does a file that fails while being parsed.
    """
    for path, source in files:
        try:
            kind = detect_kind(path)
        except ParseError as exc:
            yield _unreadable(path, source, str(exc))
            continue
        except OSError as exc:
            yield _unreadable(path, source, f"{source} cannot be read: {exc.strerror or exc}.")
            continue
        if kind == "jsonl":
            yield from _corpus_units(path, source)
            continue
        sha = file_sha256(path)

        def load(path: Path = path, source: str = source, kind: str = kind) -> ParsedDocument:
            return parse_file(path, source=source, kind=kind, workers=workers)

        yield Unit(source=source, sha256=sha, kind=kind, load=load, path=path)


def _unreadable(path: Path, source: str, error: str) -> Unit:
    """A unit for a file whose kind could not be told: loading it raises `error`."""
    try:
        sha = file_sha256(path)
    except OSError:
        sha = ""

    def load() -> ParsedDocument:
        raise ParseError(error)

    # No kind: the content is not one Zhixing reads, whatever the extension says.
    return Unit(source=source, sha256=sha, kind="", load=load)


def _loaded(document: ParsedDocument) -> Callable[[], ParsedDocument]:
    """A `load` for a document a corpus file already parsed."""
    return lambda: document


def _corpus_units(path: Path, source: str) -> Iterator[Unit | ItemFailure]:
    try:
        records = iter_jsonl(path)
        for _line, item in records:
            if isinstance(item, ParseError):
                yield ItemFailure(f"{source}", str(item))
                continue
            text = item.pages[0].text if item.pages else ""
            sha = hashlib.sha256(f"{item.title}\x00{text}".encode()).hexdigest()
            yield Unit(source=item.source, sha256=sha, kind="jsonl", load=_loaded(item))
    except ParseError as exc:
        yield ItemFailure(source, str(exc))
