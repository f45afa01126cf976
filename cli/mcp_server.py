"""`zhixing mcp`: the knowledge bases as an MCP server over stdio (the official `mcp` SDK).

An IDE agent or any MCP client starts `zhixing mcp` and calls its tools:

    list_knowledge_bases()                               what the caller may read
    search(query, knowledge_bases?, top_k?)              fused hits with where each one is
    ask(question, knowledge_bases?, max_rounds?)         the agentic answer, cited, or not found
    graph_neighbourhood(knowledge_base, entity, hops?)   an entity's K-hop neighbourhood

The server acts for one user: `--user NAME` takes that stored user's role and visibility (a
viewer sees only the knowledge bases open to them, and a name they may not see reads exactly
as a missing one), else the local user of the `zhixing` command. `--user` selects a role; it is
no boundary against whoever starts the server, who can read the home (core/home.py keeps the
home its owner's alone). Tools only read: nothing here builds, removes or changes. Standard output carries the
protocol, so nothing else is printed there; a failure reaches the client as the one sentence
the CLI would print, and the details go to the home's debug log.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

from ..core.config import Settings
from ..core.errors import NotFoundError, ZhixingError, internal_error

log = logging.getLogger(__name__)

__all__ = ["HANDLERS", "add_parsers", "build_server"]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="serve the knowledge bases to MCP clients over stdio")
    mcp.add_argument(
        "--user",
        metavar="NAME",
        help="act as this stored user, with their role and visibility (default: the local"
        " user); it selects a role, and is no boundary against whoever can read the home",
    )


def build_server(service: Any) -> Any:
    """The MCP server over `service` (a KnowledgeService, acting for the caller)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(
        name="zhixing",
        instructions=(
            "Zhixing searches private knowledge bases (standards, baselines, checklists). "
            "Call list_knowledge_bases first; cite the document and lines of what you use. "
            "An answer with found=false means the knowledge bases do not say."
        ),
    )

    def guarded(tool: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return work()
        except ZhixingError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:  # a bug: one sentence to the client, the traceback logged
            log.error("mcp tool %s failed unexpectedly", tool, exc_info=True)
            raise ToolError(str(internal_error(exc, f"running the {tool} tool"))) from exc

    @server.tool(description="The knowledge bases this user may read, with their sizes.")
    def list_knowledge_bases() -> dict[str, Any]:
        def work() -> dict[str, Any]:
            return {
                "knowledge_bases": [
                    {
                        "name": s.kb.name,
                        "mode": s.kb.mode,
                        "description": s.kb.description,
                        "tags": list(s.kb.tags),
                        "documents": s.documents,
                        "chunks": s.chunks,
                    }
                    for s in service.kbs.overview()
                ]
            }

        return guarded("list_knowledge_bases", work)

    @server.tool(
        description="Fused search (vector, keyword and more, by reciprocal rank fusion) over the "
        "named knowledge bases, or all of them. Each hit gives its text and where it is: "
        "knowledge base, document, page, lines and chunk id."
    )
    def search(
        query: str, knowledge_bases: list[str] | None = None, top_k: int = 8
    ) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            hits = service.search.query(
                query, knowledge_bases or None, top_k=max(1, min(top_k, 50))
            )
            return {"hits": [h.to_public_json() for h in hits]}

        return guarded("search", work)

    @server.tool(
        description="Answer a question from the knowledge bases by searching in rounds until "
        "the evidence covers it. The answer cites its sources; found=false means the "
        "knowledge bases hold nothing on it."
    )
    def ask(
        question: str, knowledge_bases: list[str] | None = None, max_rounds: int = 3
    ) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            rounds = max(1, min(max_rounds, 5))
            return dict(
                service.search.ask(question, knowledge_bases or None, max_rounds=rounds).to_json()
            )

        return guarded("ask", work)

    @server.tool(
        description="The entities within `hops` relations of an entity (by name or alias) in a "
        "knowledge base's graph, with the relations between them."
    )
    def graph_neighbourhood(knowledge_base: str, entity: str, hops: int = 1) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            found = service.graph.neighbourhood(knowledge_base, entity, hops=max(1, min(hops, 3)))
            return dict(found.to_json())

        return guarded("graph_neighbourhood", work)

    return server


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from ..core.auth import User
    from ..core.service import KnowledgeService

    with KnowledgeService(settings) as service:
        caller = service
        if args.user:
            stored = {u.name: u for u in service.users.all()}.get(args.user)
            if stored is None:
                raise NotFoundError(
                    f"There is no user named {args.user!r}; add one with "
                    f"`zhixing user add {args.user} --role viewer --oidc`."
                )
            caller = service.as_user(User(stored.name, stored.role))
        build_server(caller).run("stdio")
    return 0


HANDLERS = {"mcp": _mcp}
