"""The build pipeline: work units, progress events, durable jobs, pauses and resume."""

from .durable import BuildBusyError, JobRecord
from .events import BuildReport, ItemFailure, ProgressEvent, ProgressSink
from .pipeline import BuildPipeline
from .remove import remove_documents
from .texts import embedding_text

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
