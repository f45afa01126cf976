"""The build pipeline: work units, progress events, durable jobs, pauses and resume."""

from zhixing.core.build.durable import BuildBusyError, JobRecord
from zhixing.core.build.events import BuildReport, ItemFailure, ProgressEvent, ProgressSink
from zhixing.core.build.pipeline import BuildPipeline
from zhixing.core.build.remove import remove_documents
from zhixing.core.build.texts import embedding_text

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
