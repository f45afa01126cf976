"""No trace leaves the machine: LangSmith tracing is switched off for the whole process.

LangChain and LangGraph send a trace of every run to LangSmith when LANGCHAIN_TRACING_V2 or
LANGSMITH_TRACING is "true" in the environment — a variable a team may have set for another
project. Zhixing handles private documents, so it turns tracing off globally (langsmith's
`configure(enabled=False)` is the fallback every thread consults before the environment),
whatever the environment says.
"""

from __future__ import annotations

import langsmith

__all__ = ["disable_tracing"]


def disable_tracing() -> None:
    langsmith.configure(enabled=False)
