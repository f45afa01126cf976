"""The build pipeline: work units, progress events, durable jobs, pauses and resume."""

from core.build.durable import BuildBusyError, JobRecord
from core.build.events import BuildReport, ItemFailure, ProgressEvent, ProgressSink
from core.build.pipeline import BuildPipeline
from core.build.remove import remove_documents
from core.build.texts import embedding_text

__all__ = [
    "BuildBusyError",
    "BuildPipeline",
    "BuildReport",
    "ItemFailure",
    "JobRecord",
    "ProgressEvent",
    "ProgressSink",
    "embedding_text",
    "remove_documents",
]
