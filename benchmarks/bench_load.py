"""Load benchmark: search and ask throughput and latency with concurrent clients of one server.

    python benchmarks/bench_load.py [--home DIR] [--window S] [--clients 1,4,16] [--skip-ask]

One KnowledgeService in this process is shared by client threads, as the Streamlit server shares
one service between its sessions. On the 6,119-passage 2wiki corpus (built offline in `index`
mode, reused from --home when it is there), each client issues `search` (default strategies,
top 10) back to back for a fixed window after a warm-up, questions made from the corpus's titles
as bench_query.py makes them: QPS (queries completed in the window / window), p50 and p95.
Each client count runs without and with a build in the same service: a second knowledge base
built in a background thread from another corpus, started just before the window and cancelled
after it (then deleted, so every such row does the same work); how far it got is reported.
`ask` (agentic, offline) runs at 1 and 4 clients without a build.

Errors are counted per row and their messages kept, never dropped. Prints a table and writes
benchmarks/results/load.json with the machine's facts.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_query import _p, _title_questions  # noqa: E402
from common import write_results  # noqa: E402

from zhixing.core.build.events import ProgressEvent  # noqa: E402
from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.embed import BuiltinEmbedder  # noqa: E402
from zhixing.core.errors import NotFoundError  # noqa: E402
from zhixing.core.service import KnowledgeService  # noqa: E402

KB = "wiki"
BUILD_KB = "load-build"  # the background build's knowledge base, deleted after each row
NOTE = (
    "Measured on the project's shared 2-core machine: figures vary between runs (the load"
    " average is recorded per row); compare the rows of one run with each other."
)


# --- the knowledge base under test ---------------------------------------------------------


def ensure_kb(svc: KnowledgeService, corpus: Path) -> dict:
    """Build the 2wiki knowledge base unless --home already holds it complete and indexed."""
    passages = sum(1 for line in corpus.open(encoding="utf-8") if line.strip())
    try:
        svc.kbs.get(BUILD_KB)  # left over from an interrupted run
        svc.kbs.delete(BUILD_KB)
    except NotFoundError:
        pass
    try:
        kb = svc.kbs.get(KB)
        docs = svc.kbs.documents(KB)
        if len(docs) == passages and all(d.status == "indexed" for d in docs):
            return {"reused": True, "passages": passages, "build_s": None}
        svc.kbs.delete(KB)  # incomplete: start again
    except NotFoundError:
        pass
    kb = svc.kbs.create(KB, mode="index")
    start = time.perf_counter()
    report = svc.builds.add(KB, [corpus])
    seconds = time.perf_counter() - start
    if not report.ok:
        raise SystemExit(f"building {corpus.name} failed: {report.to_json()}")
    return {"reused": False, "passages": passages, "build_s": round(seconds, 1), "kb": kb.name}


def wait_indexed(svc: KnowledgeService) -> float:
    """Wait for Milvus's background indexing; return the seconds waited (timeout is fatal)."""
    start = time.perf_counter()
    if not svc._home.vectors.wait_until_indexed(svc.embedder.dimension, timeout_s=600):
        raise SystemExit("Milvus did not finish indexing within 600 s; the figures would be wrong.")
    return time.perf_counter() - start


# --- the background build ------------------------------------------------------------------


@dataclass
class BackgroundBuild:
    """A second knowledge base built in a thread of the same service, as a build job runs."""

    svc: KnowledgeService
    corpus: Path
    cancel: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    last: ProgressEvent | None = None
    events: int = 0
    start_t: float = 0.0
    end_t: float | None = None
    report: dict | None = None
    error: str = ""

    def start(self) -> None:
        self.svc.kbs.create(BUILD_KB, mode="index")
        self.start_t = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="bench-build", daemon=True)
        self._thread.start()

    def _on_event(self, event: ProgressEvent) -> None:
        self.last, self.events = event, self.events + 1
        if event.stage != "scan":
            self.started.set()

    def _run(self) -> None:
        try:
            report = self.svc.builds.add(BUILD_KB, [self.corpus], self._on_event, self.cancel)
            self.report = report.to_json()
        except Exception as exc:  # reported in the row, not lost with the thread
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.end_t = time.perf_counter()
            self.started.set()

    def progress(self) -> dict:
        event = self.last
        # The pipeline parses ahead of embedding (a few batches in flight): `documents_parsed`
        # runs ahead, `chunks_indexed` (embedded and written to Milvus) is the real progress.
        # Events come at most every 0.25 s, so a snapshot is at most that old.
        return {
            "stage": event.stage if event else None,
            "documents_parsed": event.done if event else 0,
            "documents_total": event.total if event else None,
            "chunks_indexed": event.chunks if event else 0,
            "s_since_build_start": round(time.perf_counter() - self.start_t, 1),
        }

    def stop(self) -> dict:
        """Cancel (it stops after the document it is on), wait, delete the partial knowledge base."""
        self.cancel.set()
        self._thread.join()
        result = {
            "report": self.report,
            "error": self.error,
            "ran_s": round((self.end_t or time.perf_counter()) - self.start_t, 1),
        }
        self.svc.kbs.delete(BUILD_KB)
        return result


# --- the clients ---------------------------------------------------------------------------


@dataclass
class ClientLog:
    latencies_ms: list[float] = field(default_factory=list)
    in_window: int = 0  # queries that completed before the window closed
    empty: int = 0
    errors: Counter = field(default_factory=Counter)
    warmup_errors: Counter = field(default_factory=Counter)


def _error_key(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def run_clients(
    call: Callable[[str], object],
    questions: list[str],
    clients: int,
    window_s: float,
    warmup: int,
    before_window: Callable[[], None] = lambda: None,
    at_window_end: Callable[[], None] = lambda: None,
) -> tuple[list[ClientLog], float]:
    """Run `clients` threads that call back to back for the window; return logs and overrun.

    Each thread warms up, then all start together once `before_window` returned;
    `at_window_end` runs when the window closes, before the last queries finish. A query in
    flight when the window closes still finishes and its latency counts (dropping it would hide
    the slowest ones), but not towards QPS.
    """
    logs = [ClientLog() for _ in range(clients)]
    ready = threading.Barrier(clients + 1)
    go = threading.Event()
    deadline = [0.0]

    def client(i: int) -> None:
        log = logs[i]
        # Start each client at its own place in the questions so they do not move in lockstep.
        n = i * len(questions) // clients
        for _ in range(warmup):
            try:
                call(questions[n % len(questions)])
            except Exception as exc:
                log.warmup_errors[_error_key(exc)] += 1
            n += 1
        ready.wait()
        go.wait()
        while time.perf_counter() < deadline[0]:
            start = time.perf_counter()
            try:
                result = call(questions[n % len(questions)])
            except Exception as exc:
                log.errors[_error_key(exc)] += 1
            else:
                end = time.perf_counter()
                log.latencies_ms.append((end - start) * 1000)
                log.in_window += end <= deadline[0]
                log.empty += _is_empty(result)
            n += 1

    threads = [
        threading.Thread(target=client, args=(i,), name=f"client-{i}") for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    ready.wait()
    before_window()
    deadline[0] = time.perf_counter() + window_s
    go.set()
    time.sleep(window_s)
    at_window_end()
    for thread in threads:
        thread.join()
    return logs, time.perf_counter() - deadline[0]


def _is_empty(result: object) -> bool:
    if isinstance(result, list):
        return not result
    answer = getattr(result, "answer", None)
    return answer is not None and not getattr(answer, "found", True)


def summarize(
    kind: str, clients: int, logs: list[ClientLog], window_s: float, overrun_s: float
) -> dict:
    latencies = [ms for log in logs for ms in log.latencies_ms]
    errors: Counter = sum((log.errors for log in logs), Counter())
    warmup_errors: Counter = sum((log.warmup_errors for log in logs), Counter())
    completed = sum(log.in_window for log in logs)
    return {
        "benchmark": f"load_{kind}",
        "clients": clients,
        "queries": len(latencies),
        "completed_in_window": completed,
        "qps": round(completed / window_s, 2),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(_p(latencies, 0.95), 1) if latencies else None,
        "max_ms": round(max(latencies), 1) if latencies else None,
        "errors": sum(errors.values()),
        "error_messages": dict(errors),
        "warmup_errors": sum(warmup_errors.values()),
        "warmup_error_messages": dict(warmup_errors),
        ("not_found" if kind == "ask" else "empty_results"): sum(log.empty for log in logs),
        "per_client_queries": [len(log.latencies_ms) for log in logs],
        "window_s": window_s,
        "overrun_s": round(overrun_s, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def measure(
    svc: KnowledgeService,
    kind: str,
    questions: list[str],
    clients: int,
    args: argparse.Namespace,
    build_corpus: Path | None,
) -> dict:
    """One row: `clients` clients of `kind` for the window, with or without a build running."""
    if kind == "search":
        call: Callable[[str], object] = lambda q: svc.search.query(q, [KB], top_k=10)  # noqa: E731
    else:
        call = lambda q: svc.search.ask(q, [KB], max_rounds=3)  # noqa: E731
    build = BackgroundBuild(svc, build_corpus) if build_corpus else None
    at_start: dict = {}
    at_end: dict = {}

    def start_build() -> None:
        if build is not None:
            build.start()
            build.started.wait(120)  # past the scan: documents are being parsed and embedded
            at_start.update(build.progress())

    def snapshot_build() -> None:
        if build is not None:
            at_end.update(build.progress(), finished=build.end_t is not None)

    logs, overrun = run_clients(
        call, questions, clients, args.window, args.warmup, start_build, snapshot_build
    )
    row = summarize(kind, clients, logs, args.window, overrun)
    row["build_running"] = build is not None
    if build is not None:
        finished_in_window = at_end.pop("finished")
        stopped = build.stop()
        row["build"] = {
            "corpus": build_corpus.name,
            "at_window_start": at_start,
            "at_window_end": at_end,
            "finished_before_window_end": finished_in_window,
            "chunks_indexed_per_s_in_window": round(
                (at_end["chunks_indexed"] - at_start["chunks_indexed"]) / args.window, 1
            ),
            **stopped,
        }
        row["index_wait_after_s"] = round(wait_indexed(svc), 1)
    return row


# --- output --------------------------------------------------------------------------------


def _print(rows: list[dict]) -> None:
    head = f"{'kind':6} {'clients':>7} {'build':6} {'queries':>7} {'QPS':>6} {'p50 ms':>8}"
    # With few queries in a window p95 is one of the last few values: max shows the stalls.
    print(f"{head} {'p95 ms':>8} {'max ms':>8} {'errors':>6}  build progress in the window")
    for r in rows:
        progress = ""
        if r["build_running"]:
            b = r["build"]
            s, e = b["at_window_start"], b["at_window_end"]
            total = (b["report"] or {}).get("chunks", "?")
            progress = (
                f"parsed {s['documents_parsed']}→{e['documents_parsed']}/{e['documents_total']}"
                f" docs, indexed {s['chunks_indexed']}→{e['chunks_indexed']} chunks"
                f" ({total} when it stopped)"
            )
            if b["finished_before_window_end"]:
                progress += " (FINISHED before the window ended)"
            if b["error"]:
                progress += f" (build error: {b['error']})"
        print(
            f"{r['benchmark'].removeprefix('load_'):6} {r['clients']:>7}"
            f" {'yes' if r['build_running'] else 'no':6} {r['queries']:>7} {r['qps']:>6}"
            f" {r['p50_ms']!s:>8} {r['p95_ms']!s:>8} {r['max_ms']!s:>8} {r['errors']:>6}"
            f"  {progress}"
        )
        for message, count in {**r["error_messages"], **r["warmup_error_messages"]}.items():
            print(f"    {count} × {message}")


def _machine() -> dict:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _commit() -> str | None:
    """The commit measured, with `+dirty` when the working tree has changes; None outside git."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default="/tmp/zhixing-bench-load", help="reused between runs")
    parser.add_argument("--corpus", default=str(DATA / "scale" / "2wiki-corpus-6119.jsonl"))
    parser.add_argument(
        "--build-corpus",
        default=str(DATA / "scale" / "crud-rag-news-1930.jsonl"),
        help="what the concurrent build adds to a second knowledge base",
    )
    parser.add_argument("--window", type=float, default=30.0, help="measured seconds per row")
    parser.add_argument("--warmup", type=int, default=3, help="untimed queries per client")
    parser.add_argument("--clients", default="1,4,16", help="client counts for search")
    parser.add_argument("--ask-clients", default="1,4", help="client counts for ask")
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--skip-ask", action="store_true")
    parser.add_argument("--note", default="", help="added to the JSON note (how this run was made)")
    args = parser.parse_args()
    corpus, build_corpus = Path(args.corpus), Path(args.build_corpus)
    for path in (corpus, build_corpus):
        if not path.exists():
            raise SystemExit(f"{path} is missing")
    # Offline means offline: no endpoint may leak in from the environment, for any library.
    unset = [v for v in ("OPENAI_API_KEY", "OPENAI_BASE_URL") if os.environ.pop(v, None)]
    began = time.perf_counter()
    settings = Settings(home=Path(args.home))
    embedder = BuiltinEmbedder()
    with KnowledgeService(settings, embedder=embedder) as svc:
        setup = ensure_kb(svc, corpus)
        setup["index_wait_s"] = round(wait_indexed(svc), 1)
    # Measure on a reopened home, as the server runs after a restart, not in the minutes after
    # a build (bench_query.py: search is about twice as slow then, in the same process).
    questions = _title_questions(corpus, args.questions)
    counts = [int(c) for c in args.clients.split(",")]
    ask_counts = [] if args.skip_ask else [int(c) for c in args.ask_clients.split(",")]
    rows: list[dict] = []
    with KnowledgeService(settings, embedder=embedder) as svc:
        if svc.llm is not None:
            raise SystemExit("An LLM is configured; this benchmark measures the offline mode.")
        svc._home.vectors.ensure_collection(embedder.dimension)  # load the reopened collection
        # The search rows first, then ask, and the rows with a build last: a cancelled and
        # deleted build leaves tombstones in the collection that could slow later rows.
        plan = [("search", c, None) for c in counts]
        plan += [("ask", c, None) for c in ask_counts]
        plan += [("search", c, build_corpus) for c in counts]
        for kind, clients, build in plan:
            row = measure(svc, kind, questions, clients, args, build)
            rows.append(row)
            print(
                f"  {kind} × {clients}{' + build' if build else ''}: {row['qps']} QPS,"
                f" p95 {row['p95_ms']} ms, {row['errors']} errors",
                flush=True,
            )
    wall = time.perf_counter() - began
    _print(rows)
    print(f"wall time {wall:.0f} s; knowledge base {'reused' if setup['reused'] else 'built'}")
    result = {
        "machine": _machine(),
        "note": f"{NOTE} {args.note}".strip(),
        "commit": _commit(),
        "setup": {
            **setup,
            "corpus": corpus.name,
            "mode": "index",
            "offline": True,
            "unset_env": unset,
            "questions": len(questions),
            "strategies": "default",
            "top_k": 10,
            "warmup_per_client": args.warmup,
            "wall_s": round(wall, 1),
        },
        "rows": rows,
    }
    write_results("load.json", result)


if __name__ == "__main__":
    main()
