"""LangSmith tracing: off unless Zhixing's own setting turns it on.

LangChain and LangGraph send a trace of every run to LangSmith when LANGCHAIN_TRACING_V2 or
LANGSMITH_TRACING is "true" in the environment — a variable a team may have set for another
project. Zhixing handles private documents, so it decides for the whole process itself
(langsmith's `configure`, the setting every thread consults before the environment): off,
whatever the environment says, unless ZHIXING_LANGSMITH_TRACING=true. Then the runs (prompts,
retrieved text, answers) go to the ZHIXING_LANGSMITH_PROJECT project at the endpoint and with
the key of LangSmith's own variables, LANGSMITH_ENDPOINT and LANGSMITH_API_KEY.
"""

from __future__ import annotations

import langsmith

from ..config import Settings

__all__ = ["configure_tracing", "disable_tracing"]


def configure_tracing(settings: Settings) -> None:
    if settings.langsmith_tracing:
        langsmith.configure(enabled=True, project_name=settings.langsmith_project)
    else:
        disable_tracing()


def disable_tracing() -> None:
    langsmith.configure(enabled=False)
