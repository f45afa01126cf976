"""The MCP server of `zhixing mcp`: its tools and resources, whichever transport carries them.

    list_knowledge_bases()                               what the caller may read
    search(query, knowledge_bases?, top_k?)              fused hits with where each one is
    ask(question, knowledge_bases?, max_rounds?)         the agentic answer, cited, or not found
    graph_neighbourhood(knowledge_base, entity, hops?)   an entity's K-hop neighbourhood
    zhixing://chunks/{chunk_id}                          a chunk: its text and where it is
    zhixing://documents/{document_id}                    a document: its chunks in order

Every call acts for the caller that `caller(ctx)` gives (the one user of a stdio server, or the
user whose token the HTTP request carried), through the knowledge service, so a viewer sees what
a viewer sees in the app, and a name they may not see reads exactly as a missing one. Tools
only read (annotated `readOnlyHint`). A failure reaches the client as one sentence: the
service's, a bad argument's (`SentencedTool`), or an internal error's, whose details go to the
debug log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from ..core import __version__
from ..core.errors import NotFoundError, ZhixingError, internal_error
from ..core.models import ChunkText
from ..core.service import KnowledgeService
from .mcp_schema import (
    Answer,
    Entity,
    Hits,
    Hops,
    KnowledgeBase,
    KnowledgeBaseNames,
    KnowledgeBases,
    Neighbourhood,
    Query,
    Question,
    Rounds,
    TopK,
    chunk_uri,
    document_uri,
    with_uris,
)

log = logging.getLogger(__name__)

__all__ = ["Caller", "SentencedTool", "build_server"]

Caller = Callable[[Context[Any, Any]], KnowledgeService]

_INSTRUCTIONS = (
    "Zhixing searches private knowledge bases (standards, baselines, checklists). "
    "Call list_knowledge_bases first; cite the document and lines of what you use, and read "
    "a hit's uri (zhixing://chunks/ID) to open it. An answer with found=false means the "
    "knowledge bases do not say."
)
_READ_ONLY = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True}


class SentencedTool(Tool):
    """A tool whose refusals are one sentence: arguments that fail its schema are said by
    name and bound ("search: top_k should be greater than or equal to 1, not -5."), not as
    pydantic's report with its links; a sentence the tool raised loses the SDK's prefix."""

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_argument_sentence(self.name, cause)) from cause
            if type(cause) is ToolError:  # ours, raised by `_guarded`: already one sentence
                raise ToolError(str(cause)) from cause.__cause__
            raise


def _argument_sentence(tool: str, error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the arguments"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    if first["type"] == "missing":
        return f"{tool} needs {where}{more}; see its input schema."
    said = first["msg"].removeprefix("Input ").removeprefix("Value ")
    shown = repr(first.get("input"))
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    return f"{tool}: {where} {said}, not {shown}{more}."


def build_server(
    caller: Caller, *, token_verifier: TokenVerifier | None = None, auth: AuthSettings | None = None
) -> MCPServer[Any]:
    """The MCP server whose every call acts for `caller(ctx)`; over HTTP, `token_verifier`
    and `auth` sign each request in (mcp_server.py)."""

    def guarded(tool: str, ctx: Context[Any, Any], work: Callable[[KnowledgeService], Any]) -> Any:
        try:
            return work(caller(ctx))
        except ZhixingError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:  # a bug: one sentence to the client, the traceback logged
            log.error("mcp tool %s failed unexpectedly", tool, exc_info=True)
            raise ToolError(str(internal_error(exc, f"running the {tool} tool"))) from exc

    def list_knowledge_bases(ctx: Context[Any, Any]) -> KnowledgeBases:
        def work(service: KnowledgeService) -> KnowledgeBases:
            rows = [
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
            return KnowledgeBases.model_validate({"knowledge_bases": rows})

        result: KnowledgeBases = guarded("list_knowledge_bases", ctx, work)
        return result

    def search(
        query: Query,
        ctx: Context[Any, Any],
        knowledge_bases: KnowledgeBaseNames = None,
        top_k: TopK = 8,
    ) -> Hits:
        def work(service: KnowledgeService) -> Hits:
            hits = service.search.query(query, knowledge_bases or None, top_k=top_k)
            shown = [{**h.to_public_json(), "uri": chunk_uri(h.chunk_id)} for h in hits]
            return Hits.model_validate({"hits": shown})

        result: Hits = guarded("search", ctx, work)
        return result

    def ask(
        question: Question,
        ctx: Context[Any, Any],
        knowledge_bases: KnowledgeBaseNames = None,
        max_rounds: Rounds = 3,
    ) -> Answer:
        def work(service: KnowledgeService) -> Answer:
            found = service.search.ask(question, knowledge_bases or None, max_rounds=max_rounds)
            return Answer.model_validate(with_uris(found.to_json()))

        result: Answer = guarded("ask", ctx, work)
        return result

    def graph_neighbourhood(
        knowledge_base: KnowledgeBase, entity: Entity, ctx: Context[Any, Any], hops: Hops = 1
    ) -> Neighbourhood:
        def work(service: KnowledgeService) -> Neighbourhood:
            found = service.graph.neighbourhood(knowledge_base, entity, hops=hops)
            return Neighbourhood.model_validate(found.to_json())

        result: Neighbourhood = guarded("graph_neighbourhood", ctx, work)
        return result

    described: dict[Callable[..., Any], str] = {
        list_knowledge_bases: "The knowledge bases this user may read, with their sizes.",
        search: "Fused search (vector, keyword and more, by reciprocal rank fusion) over the "
        "named knowledge bases, or all of them. Each hit gives its text and where it is: "
        "knowledge base, document, page, lines, chunk id, and the chunk's resource uri.",
        ask: "Answer a question from the knowledge bases by searching in rounds until the "
        "evidence covers it. The answer cites its sources; found=false means the knowledge "
        "bases hold nothing on it.",
        graph_neighbourhood: "The entities within `hops` relations of an entity (by name or "
        "alias) in a knowledge base's graph, with the relations between them.",
    }
    tools = [
        SentencedTool.from_function(
            fn,
            description=text,
            annotations=ToolAnnotations(
                title=fn.__name__.replace("_", " ").capitalize(),
                open_world_hint=False,
                **_READ_ONLY,
            ),
        )
        for fn, text in described.items()
    ]
    server: MCPServer[Any] = MCPServer(
        name="zhixing",
        title="Zhixing 知行",
        version=__version__,
        instructions=_INSTRUCTIONS,
        tools=tools,
        token_verifier=token_verifier,
        auth=auth,
    )
    _add_resources(server, caller)
    return server


def _add_resources(server: MCPServer[Any], caller: Caller) -> None:
    def opened(what: str, number: str, read: Callable[[int], Any]) -> str:
        if not number.isdigit() or len(number) > 18:
            raise ResourceNotFoundError(f"A {what} uri ends in its number, not {number[:40]!r}.")
        try:
            return json.dumps(read(int(number)), ensure_ascii=False, indent=1)
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except ZhixingError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource(
        "zhixing://chunks/{chunk_id}",
        name="chunk",
        title="A chunk of a document",
        description="One chunk as search hits and citations name it (chunk_id): its text, its "
        "document, page, lines and headings, and the uri of its document.",
        mime_type="application/json",
    )
    def chunk(chunk_id: str, ctx: Context[Any, Any]) -> str:
        return opened("chunk", chunk_id, lambda n: _chunk_json(caller(ctx).kbs.chunk(n)))

    @server.resource(
        "zhixing://documents/{document_id}",
        name="document",
        title="A document, chunk by chunk",
        description="A document of a knowledge base (a chunk's document_id) with its chunks in "
        "order; neighbouring chunks may share a few lines.",
        mime_type="application/json",
    )
    def document(document_id: str, ctx: Context[Any, Any]) -> str:
        def read(number: int) -> dict[str, Any]:
            found = caller(ctx).kbs.document(number)
            doc = found.document
            return {
                "document_id": doc.id,
                "knowledge_base": found.knowledge_base,
                "document": doc.source,
                "title": doc.title,
                "kind": doc.kind,
                "pages": doc.pages,
                "chunks": [_chunk_json(c) for c in found.chunks],
            }

        return opened("document", document_id, read)


def _chunk_json(found: ChunkText) -> dict[str, Any]:
    return {
        "chunk_id": found.id,
        "uri": chunk_uri(found.id),
        "knowledge_base": found.knowledge_base,
        "document": found.document,
        "document_uri": document_uri(found.document_id),
        "title": found.title,
        "page_start": found.page_start,
        "page_end": found.page_end,
        "line_start": found.line_start,
        "line_end": found.line_end,
        "heading_path": list(found.heading_path),
        "ocr": found.ocr,
        "text": found.text,
    }
