"""Agentic retrieval (docs/architecture.md §6): a LangGraph loop that plans, searches, judges and refines.

`run_agentic(question, AgentContext(...))` is the entry point; `build_graph()` the compiled graph.
"""

from .configuration import AgentContext, AnswerLike
from .flow import AgenticResult, build_graph, run_agentic

__all__ = ["AgentContext", "AgenticResult", "AnswerLike", "build_graph", "run_agentic"]
