"""The build pipeline: work units, progress events, and the resumable offline build."""

from core.build.events import BuildReport, ItemFailure, ProgressEvent, ProgressSink
from core.build.pipeline import BuildPipeline, embedding_text, remove_documents

__all__ = [
    "BuildPipeline",
    "BuildReport",
    "ItemFailure",
    "ProgressEvent",
    "ProgressSink",
    "embedding_text",
    "remove_documents",
]
