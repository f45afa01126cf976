"""What an `add` would cost in LLM calls and tokens, before it runs (a dry pass)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.build.events import ItemFailure
from core.build.sources import collect_files, iter_units
from core.errors import ParseError
from core.ingest import chunk_document
from core.models import KnowledgeBase

if TYPE_CHECKING:
    from core.build.pipeline import BuildPipeline

__all__ = ["estimate_add"]


def estimate_add(
    pipeline: BuildPipeline, kb: KnowledgeBase, paths: Sequence[Path]
) -> dict[str, Any] | None:
    """Estimate the LLM calls and tokens an `add` would cost, before it runs.

    A dry pass: parse and chunk what would be (re)built, then price one extraction call
    per chunk; unchanged documents and cached prompts cost nothing. None when offline.
    """
    if pipeline.llm is None:
        return None
    from core.llm import ROLES, chunk_knowledge_variables

    settings = pipeline.settings
    files, _ = collect_files(paths)
    states = pipeline.catalog.document_states(kb.id)
    variables = []
    for unit in iter_units(files, workers=settings.workers):
        if isinstance(unit, ItemFailure):
            continue
        previous = states.get(unit.source)
        if previous and previous[1:] == (unit.sha256, "indexed"):
            continue
        try:
            doc = unit.load()
        except ParseError:
            continue
        for chunk in chunk_document(
            doc,
            max_units=settings.chunk_units,
            overlap_units=settings.chunk_overlap_units,
        ):
            variables.append(
                chunk_knowledge_variables(
                    chunk.text,
                    mode=kb.mode,
                    title=doc.title,
                    heading=" > ".join(chunk.heading_path),
                )
            )
    estimate = pipeline.llm.estimate(ROLES["chunk_knowledge"], variables)  # type: ignore[attr-defined]
    return {**estimate, "chunks": len(variables), "concurrency": settings.llm_concurrency}
