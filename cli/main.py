"""The `zhixing` command (docs/architecture.md §9). Output shapes under --json are a contract."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

# gRPC's C core (under pymilvus and Milvus Lite's server) writes its own log lines to stderr,
# e.g. an epoll error as a process exits: noise beside the command's one-sentence errors. Set
# before gRPC loads; a user who needs them sets GRPC_VERBOSITY=DEBUG.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from ..core.build import ProgressEvent
from ..core.choices import GraphFormat
from ..core.config import Settings
from ..core.errors import NotFoundError, ZhixingError, internal_error
from ..core.home import owner_only_umask
from ..core.logs import close_debug_log, close_verbose_log, debug_log, verbose_log
from ..core.search import STRATEGIES, parse_strategies
from ..core.trace import AskEvent, EventSink, TraceEvent, is_search
from . import mcp_server, ops, serve  # noqa: E402
from .output import emit_json, print_rows  # noqa: E402

if TYPE_CHECKING:
    from ..core.service import KnowledgeService

log = logging.getLogger(__name__)

__all__ = ["build_parser", "main"]

_BATCH = 64


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zhixing", description="知行 Zhixing: a local-first knowledge base with an agent."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    kb = sub.add_parser("kb", help="create, list or delete knowledge bases")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True, metavar="ACTION")
    create = kb_sub.add_parser("create", help="create a knowledge base")
    create.add_argument("name")
    create.add_argument(
        "--mode",
        choices=["graph", "index"],
        default="index",
        help="graph = 增强知识图谱索引, index = 仅构建知识索引 (default)",
    )
    create.add_argument("--tags", default="", help="comma-separated tags")
    create.add_argument("--description", default="")
    kb_list = kb_sub.add_parser("list", help="list knowledge bases")
    kb_list.add_argument("--json", action="store_true")
    delete = kb_sub.add_parser("delete", help="delete a knowledge base and everything in it")
    delete.add_argument("name")

    add = sub.add_parser("add", help="add files, folders or .jsonl corpora to a knowledge base")
    add.add_argument("name")
    add.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    add.add_argument("--json", action="store_true", help="print a JSON summary on stdout")

    resume = sub.add_parser("resume", help="finish builds that a kill or a lost LLM interrupted")
    resume.add_argument("name", nargs="?", help="only this knowledge base's builds")
    resume.add_argument("--json", action="store_true", help="print a JSON list of summaries")

    builds = sub.add_parser(
        "builds",
        help="list the builds at work or interrupted in every process on the catalog (the app's"
        " instances, other commands), or cancel one",
    )
    builds.add_argument("--cancel", metavar="ID", help="ask the process that runs build ID to stop")
    builds.add_argument("--json", action="store_true")

    docs = sub.add_parser("docs", help="list the documents of a knowledge base")
    docs.add_argument("name")
    docs.add_argument("--json", action="store_true")

    remove = sub.add_parser("remove", help="remove a document and every trace of it")
    remove.add_argument("name")
    remove.add_argument("document")

    search = sub.add_parser("search", help="search one, several or all knowledge bases")
    search.add_argument("name", nargs="?", help="knowledge base (comma-separated for several)")
    search.add_argument("query", nargs="?")
    search.add_argument("--all", action="store_true", help="search every knowledge base")
    search.add_argument("--queries", type=Path, help='JSONL file of {"id", "question"}')
    search.add_argument("--top-k", type=int, default=10)
    search.add_argument(
        "--strategies", default=None, help=f"comma-separated, from: {','.join(STRATEGIES)}"
    )
    search.add_argument("--json", action="store_true")
    search.add_argument(
        "--summary", action="store_true", help="add a grounded answer from the hits, with citations"
    )

    ask = sub.add_parser("ask", help="answer a question by searching in several rounds")
    ask.add_argument("name", nargs="?", help="knowledge base (comma-separated for several)")
    ask.add_argument("question", nargs="?")
    ask.add_argument("--all", action="store_true", help="ask every knowledge base")
    ask.add_argument("--max-rounds", type=int, default=3, help="search rounds, 1 to 5 (default 3)")
    ask.add_argument("--json", action="store_true")

    run = sub.add_parser("run", help="carry out a task with the agent, using the knowledge")
    run.add_argument("name", nargs="?", help="knowledge base (comma-separated for several)")
    run.add_argument("task", nargs="?")
    run.add_argument("--all", action="store_true", help="attach every knowledge base")
    run.add_argument(
        "--workspace", type=Path, help="a project folder, or a .zip / .tar.gz of one (read-only)"
    )
    run.add_argument("--json", action="store_true")
    run.add_argument(
        "--findings",
        type=Path,
        metavar="FILE",
        help="also write the findings as SARIF 2.1.0 (FILE.sarif) or CSV (FILE.csv)",
    )

    graph = sub.add_parser(
        "graph", help="entity graph statistics, an entity's neighbourhood, or the graph as a file"
    )
    graph.add_argument("name")
    graph.add_argument(
        "--export",
        type=Path,
        metavar="FILE",
        help="write the whole graph to FILE.graphml (yEd, Cytoscape, Gephi) or FILE.gexf (Gephi)",
    )
    graph.add_argument("--entity", help="an entity name or alias (any language, any case)")
    graph.add_argument("--hops", type=int, default=1)
    graph.add_argument("--limit", type=int, default=60, help="at most this many nodes")
    graph.add_argument("--json", action="store_true")

    export = sub.add_parser("export", help="write one knowledge base to a portable archive")
    export.add_argument("name")
    export.add_argument("file", type=Path, help="the archive to write (a .zip)")
    export.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    imp = sub.add_parser("import", help="restore a knowledge base from an exported archive")
    imp.add_argument("file", type=Path)
    imp.add_argument("--as", dest="as_name", metavar="NAME", help="import under another name")
    imp.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    whole = sub.add_parser("backup", help="back the whole home up to one file, while it serves")
    whole.add_argument("file", type=Path, help="the backup to write (a .zip)")
    whole.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    back = sub.add_parser("restore", help="restore a whole home from a backup, into an empty home")
    back.add_argument("file", type=Path)
    back.add_argument("--home", type=Path, help="the new home (default: ZHIXING_HOME); empty")
    back.add_argument(
        "--catalog",
        metavar="URI",
        help="restore the catalog and conversations into this empty PostgreSQL database"
        " (postgresql://…; default: ZHIXING_CATALOG_URI, else catalog.db in the home)",
    )
    back.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    serve.add_parsers(sub)
    mcp_server.add_parsers(sub)
    ops.add_parsers(sub)
    _add_verbose(parser)
    return parser


_VERBOSE_HELP = (
    "show retries, repaired model replies, fallbacks and timings on stderr as they happen"
    " (the debug log, $ZHIXING_HOME/logs/zhixing.log, always has them)"
)


def _add_verbose(parser: argparse.ArgumentParser, *, top: bool = True) -> None:
    """`--verbose` before the command or after it: `zhixing -v ask …` and `zhixing ask … -v`."""
    # A subcommand's default would overwrite the value parsed before it: SUPPRESS keeps it.
    default: Any = False if top else argparse.SUPPRESS
    parser.add_argument("-v", "--verbose", action="store_true", default=default, help=_VERBOSE_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_verbose(sub, top=False)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    action = getattr(args, f"{args.command}_command", None)
    command = f"{args.command} {action}" if action else args.command
    logged: Path | None = None
    shown: logging.Handler | None = None
    try:
        settings = Settings.from_env()
        level, as_json = settings.log_level, settings.log_format == "json"
        shown = verbose_log(sys.stderr, level=level, as_json=as_json) if args.verbose else None
        if command in mcp_server.EXISTING_HOME:  # before the debug log makes the home
            mcp_server.require_home(settings)
        owner_only_umask()  # the home and all in it is this user's alone (core/home.py)
        # A probe makes nothing: a misspelt home is reported missing, not given a log folder.
        if command != "health" or settings.home.is_dir():
            logged = debug_log(settings.home, level=level, as_json=as_json)
        return _HANDLERS[command](args, settings)
    except ZhixingError as exc:
        log.debug("zhixing %s failed", command, exc_info=True)
        print(f"zhixing: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zhixing: interrupted; run the same command again to resume.", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one sentence here, the traceback in the debug log
        log.error("zhixing %s failed unexpectedly", command, exc_info=True)
        message = str(internal_error(exc, f"running `zhixing {command}`"))
        if logged is not None:
            message = message.rstrip(".") + f" ({logged})."
        print(f"zhixing: {message}", file=sys.stderr)
        return 1
    finally:
        if logged is not None:
            close_debug_log(logged)
        if shown is not None:
            close_verbose_log(shown)


def _service(settings: Settings) -> KnowledgeService:  # imported lazily: `--help` stays fast
    from ..core.service import KnowledgeService

    return KnowledgeService(settings)


# --- knowledge bases -----------------------------------------------------------------------


def _kb_create(args: argparse.Namespace, settings: Settings) -> int:
    tags = [t.strip() for t in args.tags.split(",") if t.strip()]
    with _service(settings) as svc:
        kb = svc.kbs.create(args.name, mode=args.mode, tags=tags, description=args.description)
    print(f"Created knowledge base {kb.name!r} (mode {kb.mode}).")
    return 0


def _kb_line(r: dict[str, Any]) -> str:
    tags = f" [{', '.join(r['tags'])}]" if r["tags"] else ""
    return f"{r['name']}\t{r['mode']}\t{r['documents']} documents\t{r['chunks']} chunks{tags}"


def _kb_list(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        rows: list[dict[str, Any]] = [
            {
                "name": row.kb.name,
                "mode": row.kb.mode,
                "tags": list(row.kb.tags),
                "description": row.kb.description,
                "documents": row.documents,
                "chunks": row.chunks,
            }
            for row in svc.kbs.overview()
        ]
    empty = "No knowledge bases yet; create one with: zhixing kb create NAME"
    print_rows(rows, as_json=args.json, empty=empty, line=_kb_line)
    return 0


def _kb_delete(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        svc.kbs.delete(args.name)
    print(f"Deleted knowledge base {args.name!r}.")
    return 0


# --- documents -----------------------------------------------------------------------------


class _Progress:
    """Render build progress on stderr: a redrawn bar on a terminal, sparse lines otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        stream = stream or sys.stderr
        self.stream = stream
        self.tty = stream.isatty()
        self.last = 0.0
        self.stage = ""

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        final = event.stage == "done"
        new_stage = event.stage != self.stage
        if event.stage == "paused":  # said in full, on its own line: the user may act on it
            self.stream.write(("\n" if self.tty else "") + f"paused: {event.message}\n")
            self.stream.flush()
            self.stage = event.stage
            return
        if not self.tty and not final and not new_stage and now - self.last < 2.0:
            return
        self.last, self.stage = now, event.stage
        total = max(event.total, 1)
        width = 24
        filled = int(width * min(event.done, total) / total)
        eta = f" ETA {event.eta_s:.0f}s" if event.eta_s else ""
        doing = f"{event.stage}: {event.message[:50]}"
        if event.stage in ("ocr", "vision"):  # a long scan's pages are the progress worth seeing
            reader = "OCR" if event.stage == "ocr" else "vision"
            doing = f"{reader} page {event.step}/{event.steps}: {event.message[:40]}"
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {event.done}/{event.total} documents,"
            f" {event.chunks} chunks{eta} · {doing}"
        )
        if self.tty:
            self.stream.write("\r" + line.ljust(130)[:130] + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


def _add(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        estimate = svc.builds.estimate(args.name, args.paths)
        embedding = estimate.embedding if estimate else None
        if embedding is not None and embedding.seconds is not None and embedding.texts:
            print(
                f"Embedding estimate: {_duration(embedding.seconds)} for {embedding.texts}"
                f" chunks with {embedding.model} (measured on two cores).",
                file=sys.stderr,
            )
        if estimate is not None and estimate.llm is not None:
            llm = estimate.llm
            print(
                f"LLM estimate: {llm.calls} calls ({llm.cached} cached) for "
                f"{estimate.chunks} chunks, ~{llm.prompt_tokens:,} prompt + "
                f"~{llm.completion_tokens:,} completion tokens on {llm.model}, "
                f"{llm.concurrency} at a time, {_duration(llm.seconds)} of model time.",
                file=sys.stderr,
            )
        report = svc.builds.add(args.name, args.paths, on_event=_Progress())
    for failure in report.failed:
        print(f"failed: {failure.error}", file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if report.stopped:
        print(f"stopped: {report.stopped}", file=sys.stderr)
    if args.json:
        emit_json(report.to_json())
    else:
        print(
            f"{args.name}: {len(report.added)} added ({len(report.replaced)} replaced), "
            f"{len(report.skipped)} unchanged, {len(report.failed)} failed, "
            f"{report.chunks} chunks, {report.questions} questions"
            + (f", {report.degraded} degraded" if report.degraded else "")
            + f" in {report.seconds:.1f}s."
        )
        if report.fallbacks:
            reasons = ", ".join(f"{n} {why}" for why, n in report.fallbacks.items())
            print(
                f"{report.degraded} chunk(s) fell back to their text alone ({reasons})."
                if not report.offline
                else f"{report.degraded} chunk(s) got no usable knowledge from the model"
                f" ({reasons}): {report.offline} kept the built-in extractor's entities and"
                f" relations, {report.degraded - report.offline} fell back to their text alone.",
                file=sys.stderr,
            )
        if report.rejected:
            total = sum(report.rejected.values())
            print(
                f"{total} unusable part(s) of LLM replies were dropped (--json lists them).",
                file=sys.stderr,
            )
    return 0 if report.ok else 1


def _resume(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        # A cancelled build's documents left are finished too (a cancel keeps them for this).
        reports = svc.builds.resume_interrupted(args.name, on_event=_Progress(), cancelled=True)
    for report in reports:
        for failure in report.failed:
            print(f"failed: {failure.error}", file=sys.stderr)
        if report.stopped:
            print(f"stopped: {report.stopped}", file=sys.stderr)
    if args.json:
        emit_json([r.to_json() for r in reports])
    elif not reports:
        print("No interrupted build to resume.")
    else:
        for r in reports:
            print(
                f"{r.kb}: resumed, {len(r.added)} added, {len(r.skipped)} unchanged, "
                f"{len(r.failed)} failed, {r.chunks} chunks in {r.seconds:.1f}s."
            )
    return 0 if all(r.ok for r in reports) else 1


def _builds(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        if args.cancel:
            wanted = str(args.cancel)
            job = svc.builds.job(wanted if wanted.startswith("db-") else f"db-{wanted}")
            if job is None or not job.running:
                raise NotFoundError(
                    f"No build {args.cancel} is at work; `zhixing builds` lists those that are."
                )
            svc.builds.cancel(job.id)
            print(
                f"Asked {job.elsewhere} to stop the build of {job.kb!r}; it stops within seconds."
            )
            return 0
        jobs = svc.builds.jobs()
    rows = [
        {
            "id": j.id.removeprefix("db-"),
            "kb": j.kb,
            "state": j.state.value,
            "done": j.done,
            "total": j.total,
            "stage": j.stage,
            "progress": round(j.progress, 3),
            "cancel_requested": j.cancel_requested,
            "owner": j.elsewhere,
        }
        for j in jobs
    ]
    print_rows(
        rows,
        as_json=args.json,
        empty="No build is at work or interrupted.",
        line=lambda r: (
            f"{r['id']}\t{r['kb']}\t{r['state']}\t{r['done']}/{r['total']}\t{r['stage']}"
            f"\t{r['owner']}"
        ),
    )
    return 0


def _document_line(r: dict[str, Any]) -> str:
    error = f"\t{r['error']}" if r["error"] else ""
    return f"{r['document']}\t{r['pages']} pages\t{r['chunks']} chunks\t{r['status']}{error}"


def _docs(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        docs = svc.kbs.documents(args.name)
    rows = [
        {
            "document": d.source,
            "pages": d.pages,
            "chunks": d.chunks,
            "status": d.status,
            "error": d.error,
        }
        for d in docs
    ]
    empty = f"{args.name!r} has no documents yet; add some with: zhixing add {args.name} PATH"
    print_rows(rows, as_json=args.json, empty=empty, line=_document_line)
    return 0


def _remove(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        doc = svc.builds.remove(args.name, args.document)
    print(f"Removed {doc.source!r} ({doc.chunks} chunks) from {args.name!r}.")
    return 0


# --- search --------------------------------------------------------------------------------


def _scope(args: argparse.Namespace, text: str | None) -> tuple[str | None, list[str] | None]:
    """(query, knowledge-base names) from `NAME QUERY` or `--all QUERY`; None names = all."""
    if args.all:
        # With --all the one positional argument is the query.
        if text is not None and args.name is not None:
            raise ZhixingError("Give either a knowledge base name or --all, not both.")
        return (text if text is not None else args.name), None
    names = [n for n in (args.name or "").split(",") if n] or None
    if names is None:
        raise ZhixingError("Name a knowledge base, or pass --all.")
    return text, names


def _search(args: argparse.Namespace, settings: Settings) -> int:
    query, names = _scope(args, args.query)
    strategies = None if args.strategies is None else parse_strategies(args.strategies)
    if args.queries is not None:
        if query is not None:
            raise ZhixingError("Give either a query or --queries FILE, not both.")
        if not args.json:
            raise ZhixingError("--queries needs --json: the output is one JSON line per query.")
        return _search_batch(args, settings, names, strategies)
    if not query or not query.strip():
        raise ZhixingError("The search query is empty; type a question or some keywords.")
    with _service(settings) as svc:
        hits = svc.search.query(query, names, top_k=args.top_k, strategies=strategies)
        summary = svc.search.summarize(query, hits) if args.summary else None
    if args.json:
        out: dict[str, Any] = {
            "query": query,
            "hits": [h.to_public_json(i) for i, h in enumerate(hits, 1)],
        }
        if summary is not None:
            out["summary"] = summary.to_json()
        emit_json(out)
        return 0
    if summary is not None:
        _print_answer(summary)
        print()
    if not hits:
        print("No hits.")
    for i, hit in enumerate(hits, 1):
        where = f"{hit.document} p.{hit.page}" + (
            f" · {' > '.join(hit.heading_path)}" if hit.heading_path else ""
        )
        ranks = ", ".join(f"{k}#{v}" for k, v in hit.strategies.items())
        snippet = " ".join(hit.text.split())[:200]
        print(f"{i}. [{hit.score:.4f}] {where}  ({ranks})\n   {snippet}")
    return 0


def _read_queries(path: Path) -> list[tuple[Any, str | None, str | None]]:
    """Read (id, question, error) per non-blank line; a broken line keeps its place."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ZhixingError(f"The queries file {path} cannot be read: {exc}.") from exc
    out: list[tuple[Any, str | None, str | None]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        item: Any = None
        try:
            item = json.loads(line)
            question = item["question"]
            if not isinstance(question, str) or not question.strip():
                raise ValueError("empty question")
            out.append((item.get("id"), question, None))
        except (ValueError, KeyError, TypeError) as exc:
            ident = item.get("id") if isinstance(item, dict) else None
            out.append((ident, None, f"line {number} of {path.name}: {_why(exc)}"))
    return out


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return 'missing "question"'
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg})"
    return "the question is empty or not a string"


def _search_batch(
    args: argparse.Namespace,
    settings: Settings,
    names: list[str] | None,
    strategies: tuple[str, ...] | None,
) -> int:
    items = _read_queries(args.queries)
    failed = 0
    with _service(settings) as svc:
        for start in range(0, len(items), _BATCH):
            batch = items[start : start + _BATCH]
            good = [q for _, q, err in batch if err is None and q is not None]
            results = iter(svc.search.many(good, names, top_k=args.top_k, strategies=strategies))
            for ident, _question, error in batch:
                if error is not None:
                    failed += 1
                    print(f"zhixing: {error}", file=sys.stderr)
                    emit_json({"id": ident, "hits": [], "error": error})
                    continue
                hits = next(results)
                emit_json(
                    {"id": ident, "hits": [h.to_public_json(i) for i, h in enumerate(hits, 1)]}
                )
            sys.stdout.flush()
    return 1 if failed else 0


def _graph(args: argparse.Namespace, settings: Settings) -> int:
    if args.hops < 0:
        raise ZhixingError("--hops must be 0 or more.")
    if args.export is not None:
        return _graph_export(args, settings)
    with _service(settings) as svc:
        if args.entity is None:
            stats = svc.graph.stats(args.name)
            if args.json:
                emit_json(stats.to_json())
            else:
                types = ", ".join(f"{t} {n}" for t, n in stats.types.items()) or "none"
                print(
                    f"{args.name}: {stats.entities} entities, {stats.relations} relations"
                    f" (types: {types})"
                )
            return 0
        view = svc.graph.neighbourhood(args.name, args.entity, hops=args.hops, limit=args.limit)
    if args.json:
        emit_json(view.to_json())
        return 0
    names = {n.id: n.name for n in view.nodes}
    for node in view.nodes:
        aliases = f" (aka {', '.join(node.aliases)})" if node.aliases else ""
        print(f"{node.name} [{node.type}]{aliases}: {node.description[:120]}")
    for edge in view.edges:
        print(
            f"  {names[edge.source]} -{edge.type}-> {names[edge.target]}  (weight {edge.weight:g})"
        )
    return 0


def _graph_export(args: argparse.Namespace, settings: Settings) -> int:
    path: Path = args.export
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in {f.value for f in GraphFormat}:
        raise ZhixingError(
            f"{path.name}: --export writes .graphml or .gexf files; name the file so."
        )
    if args.entity is not None:
        raise ZhixingError("--export writes the whole graph; leave out --entity.")
    if not path.parent.is_dir():
        raise ZhixingError(
            f"{path.parent} is not a folder; --export cannot write {path.name} there."
        )
    with _service(settings) as svc:
        data = svc.graph.file(args.name, GraphFormat.parse(suffix))
        stats = svc.graph.stats(args.name)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)  # a failed write never leaves half a file under the asked-for name
    print(
        f"Wrote {stats.entities} entities and {stats.relations} relations of {args.name!r}"
        f" to {path} ({len(data):,} bytes).",
        file=sys.stderr,
    )
    return 0


def _print_answer(answer: Any) -> None:
    print(answer.answer)
    _print_citations(answer)


def _print_citations(answer: Any) -> None:
    for c in answer.citations:
        ocr = " (OCR)" if c.ocr else ""
        print(f"[{c.n}] {c.document} p.{c.page}{ocr}: {' '.join(c.text.split())[:160]}")


def _trace_line(event: AskEvent) -> str:
    """One stderr line per agentic step, as it happens (the CLI's dispatcher of `AskEvent`)."""
    if event["node"] == "plan":
        return (
            f"[round {event['round']}] plan: aspects {event['aspects']}; queries {event['queries']}"
        )
    if event["node"] == "retrieve":
        return (
            f"[round {event['round']}] retrieve: {len(event['queries'])} queries, hits by strategy "
            f"{event['hits_by_strategy']}, {event['new_evidence']} new evidence"
        )
    if event["node"] == "evaluate":
        verdict = "sufficient" if event["sufficient"] else f"missing {event['missing']}"
        return f"[round {event['round']}] evaluate ({event['judge']}): {verdict}"
    if event["node"] == "refine":
        return f"[round {event['round']}] refine: {event['queries']}"
    if event["node"] == "merge":
        return f"merge: {event['evidence']} pieces of evidence by aspect {event['by_aspect']}"
    if event["node"] == "answer_text":
        return f"answer: {len(event['text'])} characters written"
    return f"answer: {'found' if event['found'] else 'not found'}"


def _live(line: Callable[[Any], str]) -> EventSink:
    """An `on_event` that prints each agent step on stderr as it happens."""
    return lambda event: print(line(event), file=sys.stderr, flush=True)


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    question, names = _scope(args, args.question)
    if not question or not question.strip():
        raise ZhixingError("The question is empty.")
    if not 1 <= args.max_rounds <= 5:
        raise ZhixingError("--max-rounds must be between 1 and 5.")

    live = _LiveAnswer(sys.stdout) if not args.json and sys.stdout.isatty() else None
    trace = _live(_trace_line)

    def on_event(event: AskEvent) -> None:
        if event["node"] != "answer_text":
            trace(event)
        elif live is not None:
            live.show(event["text"])

    with _service(settings) as svc:
        result = svc.search.ask(question, names, max_rounds=args.max_rounds, on_event=on_event)
    if args.json:
        emit_json(result.to_json())
    elif live is not None and live.shown:
        live.finish(result.answer)
    else:
        _print_answer(result.answer)
    return 0


class _LiveAnswer:
    """On a terminal, the answer printed as the model writes it; the final answer then adds
    what is left (its last citation markers) or, when it differs (a fallback), is printed
    again in full below a rule."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.shown = ""

    def show(self, text: str) -> None:
        if text.startswith(self.shown):
            self.out.write(text[len(self.shown) :])
            self.out.flush()
            self.shown = text

    def finish(self, answer: Any) -> None:
        if answer.answer.startswith(self.shown):
            print(answer.answer[len(self.shown) :], file=self.out)
            _print_citations(answer)
            return
        print("\n" + "-" * 40, file=self.out)
        _print_answer(answer)


def _task_line(event: TraceEvent) -> str:
    """One stderr line per task-agent step, as it happens (the CLI's dispatcher of its trace)."""
    if is_search(event):  # the agentic search inside research or a subtask
        phase = event.get("phase")
        where = "research" if phase == "research" else f"subtask {event.get('subtask')}"
        return f"  [{where}] {_trace_line(event)}"
    if event["node"] == "budget":
        parts = ", ".join(f"{k} {v}" for k, v in event["parts"].items())
        return f"model budget: at most {event['calls']} call(s) ({parts}) besides the research"
    if event["node"] == "analysis":
        if not event["done"]:
            return f"analysis: {event['files']} of {event['total']} Java files parsed"
        return (
            f"analysis: {event['files']} Java file(s) in {event['seconds']:.1f} s,"
            f" {event['findings']} data-flow finding(s)"
            + (f", {event['parse_errors']} with syntax errors" if event["parse_errors"] else "")
        )
    if event["node"] == "probe":
        return f"research: {event['topic']} -> {event['sections'] or 'nothing'}"
    if event["node"] == "research":
        return f"research: {event['evidence']} pieces of knowledge from {event['sections']}"
    if event["node"] == "task_plan":
        return "plan: " + " | ".join(event["plan"])
    if event["node"] == "replan":
        return "revised plan: " + " | ".join(s["title"] for s in event["plan"])
    if event["node"] == "subtask":
        return f"[subtask {event['subtask']}] {event['title']}"
    if event["node"] == "tool_call":
        args = json.dumps(event["args"], ensure_ascii=False)
        return f"[subtask {event['subtask']}] #{event['step']} {event['tool']} {args}"
    if event["node"] == "tool_result":
        first = (event["output"] or "").splitlines()[:1]
        status = "ok" if event["ok"] else "refused"
        return f"[subtask {event['subtask']}]   -> {status}: {first[0] if first else ''}"
    if event["node"] == "finding":
        f = event["finding"]
        return f"[subtask {event['subtask']}] finding [{f['severity']}] {f['file']}:{f['line']}"
    if event["node"] == "subtask_done":
        return f"[subtask {event['subtask']}] done ({event['mode']}): {event['summary']}"
    return f"report: {event['findings']} finding(s)"


def _run(args: argparse.Namespace, settings: Settings) -> int:
    task, names = _scope(args, args.task)
    if not task or not task.strip():
        raise ZhixingError("The task is empty.")
    findings_to = _findings_path(args.findings)

    with _service(settings) as svc:
        result = svc.tasks.run(task, names, workspace=args.workspace, on_event=_live(_task_line))
    if findings_to is not None:
        from ..core import __version__
        from ..core.task.export import write_findings

        findings = [f.to_json() for f in result.findings]
        # A folder is the root the paths are relative to; an archive's unpacked copy is not.
        folder = args.workspace if args.workspace is not None and args.workspace.is_dir() else None
        write_findings(findings, findings_to, __version__, folder)
        print(f"Wrote {len(findings)} finding(s) to {findings_to}.", file=sys.stderr)
    if args.json:
        emit_json(result.to_json())
    else:
        sys.stdout.write(result.report)
    return 0


def _findings_path(path: Path | None) -> Path | None:
    """Check --findings before the run, so a long audit is not lost to a bad name."""
    if path is None:
        return None
    if not path.name.lower().endswith((".sarif", ".sarif.json", ".csv")):
        raise ZhixingError(
            f"{path.name}: --findings writes .sarif or .csv files; name the file so."
        )
    if not path.parent.is_dir():
        raise ZhixingError(
            f"{path.parent} is not a folder; --findings cannot write {path.name} there."
        )
    return path


# --- backup --------------------------------------------------------------------------------


def _counts_line(counts: dict[str, int]) -> str:
    names = ("documents", "chunks", "questions", "entities", "relations", "vectors")
    return ", ".join(f"{counts.get(n, 0)} {n}" for n in names)


def _export(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        summary = svc.kbs.export_archive(args.name, args.file)
    if args.json:
        emit_json(summary.to_json())
    else:
        print(f"Exported {args.name!r} to {args.file}: {_counts_line(summary.counts)}.")
    return 0


def _import(args: argparse.Namespace, settings: Settings) -> int:
    with _service(settings) as svc:
        summary = svc.kbs.import_archive(args.file, as_name=args.as_name)
    if args.json:
        emit_json(summary.to_json())
    else:
        how = f", re-embedded with {summary.embedding}" if summary.reembedded else ""
        print(f"Imported {summary.name!r} from {args.file}: {_counts_line(summary.counts)}{how}.")
    return 0


class _Steps:
    """A backup's or restore's progress on stderr: each step once, and its count every second."""

    def __init__(self, verb: str) -> None:
        self.verb, self.step, self.shown = verb, "", 0.0

    def __call__(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        if what == self.step and now - self.shown < 1.0 and done < total:
            return
        self.step, self.shown = what, now
        count = f" {done}/{total}" if total > 1 else ""
        print(f"{self.verb}: {what}{count}", file=sys.stderr, flush=True)


def _kb_counts(summary: dict[str, dict[str, int]]) -> str:
    return ", ".join(f"{name} ({c['documents']} documents)" for name, c in summary.items())


def _backup(args: argparse.Namespace, settings: Settings) -> int:
    from ..core.backup import backup_home

    summary = backup_home(settings, args.file, progress=_Steps("backup"))
    if args.json:
        emit_json(summary.to_json())
        return 0
    print(
        f"Backed {settings.home} up to {args.file}: {len(summary.knowledge_bases)} knowledge"
        f" base(s) {_kb_counts(summary.knowledge_bases)}, {summary.users} user(s)."
    )
    for note in summary.notes:
        print(f"Note: {note}.")
    return 0


def _restore(args: argparse.Namespace, settings: Settings) -> int:
    from dataclasses import replace

    from ..core.backup import restore_home

    if args.home is not None:
        settings = replace(settings, home=args.home)
    if args.catalog is not None:
        settings = replace(settings, catalog_uri=args.catalog.strip())
    summary = restore_home(settings, args.file, progress=_Steps("restore"))
    if args.json:
        emit_json(summary.to_json())
        return 0
    where = " (catalog and conversations in PostgreSQL)" if settings.catalog_on_postgres else ""
    print(
        f"Restored {args.file} into {settings.home}{where}: {len(summary.knowledge_bases)}"
        f" knowledge base(s) {_kb_counts(summary.knowledge_bases)}, {summary.users} user(s)."
    )
    return 0


_HANDLERS = {
    "ask": _ask,
    "run": _run,
    "graph": _graph,
    "kb create": _kb_create,
    "kb list": _kb_list,
    "kb delete": _kb_delete,
    "add": _add,
    "resume": _resume,
    "builds": _builds,
    "docs": _docs,
    "remove": _remove,
    "search": _search,
    "export": _export,
    "import": _import,
    "backup": _backup,
    "restore": _restore,
    **serve.HANDLERS,
    **mcp_server.HANDLERS,
    **ops.HANDLERS,
}

if __name__ == "__main__":
    raise SystemExit(main())
