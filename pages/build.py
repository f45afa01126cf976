"""The build page (构建): create knowledge bases, watch their builds, manage their documents."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from zhixing.app.background import stage_now, stage_text
from zhixing.app.services import session_service
from zhixing.app.strings import build as T
from zhixing.app.strings import shell as SHELL
from zhixing.app.widgets import (
    ROOT,
    SAMPLE_READY,
    empty_state,
    guarded,
    inert,
    kb_names,
    show_error,
)
from zhixing.core.errors import ZhixingError
from zhixing.core.service import BuildEstimate, BuildReport, JobView

MODES = ("graph", "index")
MODE_LABELS = {"graph": T.MODE_GRAPH, "index": T.MODE_INDEX}
MODE_HELP = {"graph": T.MODE_GRAPH_HELP, "index": T.MODE_INDEX_HELP}
TAIL = 12  # log lines shown while a job runs; the rest are in the expander
RECALL_PAGE = ROOT / "pages" / "recall.py"
GRAPH_PAGE = ROOT / "pages" / "graph.py"

service = session_service()
st.session_state.setdefault("build-generation", 0)  # bumped to reset the upload widgets


def uploads(files: Any) -> list[tuple[str, bytes]]:
    return [(f.name, f.getvalue()) for f in files or []]


def flash(message: str, *, warning: bool = False) -> None:
    """Show `message` after the rerun that follows a change (as a warning if `warning`)."""
    st.session_state["build-flash"] = (message, warning)
    st.session_state["build-generation"] += 1
    st.rerun()


def act(step: Callable[[], object], message: str) -> None:
    """Run one change; on success rerun with `message`, on failure say why."""
    try:
        step()
    except ZhixingError as exc:
        show_error(exc)
        return
    flash(message)


def mode_captions(files: Any) -> list[str]:
    if not service.builds.worth_estimating():
        return [f"{MODE_HELP[m]} {T.MODE_OFFLINE_COST}" for m in MODES]
    key = tuple((f.name, f.size) for f in files or [])
    costs = st.session_state.get("build-estimate", {}).get(key)
    if files and costs is None and st.button(T.ESTIMATE, key="create-estimate"):
        costs = guarded(lambda: service.builds.estimate_uploads(uploads(files), MODES)) or {}
        st.session_state["build-estimate"] = {key: costs}
    if not costs:
        unknown = (
            T.MODE_ONLINE_UNKNOWN
            if service.settings.llm_configured
            else f"{T.MODE_OFFLINE_COST}{T.MODE_EMBED_UNKNOWN.format(model=service.embedder.name)}"
        )
        return [f"{MODE_HELP[m]} {unknown}" for m in MODES]
    return [f"{MODE_HELP[m]} {cost_text(costs[m])}" for m in MODES]


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return str(T.SECONDS.format(n=max(1, round(seconds))))
    if seconds < 5400:
        return str(T.MINUTES.format(n=round(seconds / 60)))
    return str(T.HOURS.format(n=f"{seconds / 3600:.1f}"))


# The breakdown's wording; it belongs with the others in app/strings/build.py.
ROLES_COST = (
    "其中分块抽取 {chunk} 次，实体合并确认约 {same} 次，描述摘要约 {summaries} 次（{basis}）。"
)
ROLES_BASIS = {"history": "按本知识库已有的构建估计", "default": "按基准语料的平均比例估计"}


def cost_text(cost: BuildEstimate | None) -> str:
    """One mode's estimate: calls and tokens, in graph mode the calls per role, and the
    embedding time where the embedder's speed is known."""
    if cost is None:
        return str(T.MODE_OFFLINE_COST)
    embedding = cost.embedding
    took = (
        T.EMBEDDING_COST.format(
            time=duration_text(embedding.seconds),
            model=embedding.model,
            texts=embedding.texts,
        )
        if embedding.seconds is not None
        else ""
    )
    llm = cost.llm
    if llm is None:
        return f"{T.MODE_OFFLINE_COST}{took}"
    text = T.MODE_ONLINE_COST.format(
        calls=llm.calls,
        cached=llm.cached,
        tokens=f"{llm.prompt_tokens + llm.completion_tokens:,}",
        time=duration_text(llm.seconds),
    )
    roles = llm.by_role
    if roles.get("same_entity") or roles.get("summarize_description"):
        text += ROLES_COST.format(
            chunk=roles.get("chunk_knowledge", 0),
            same=roles.get("same_entity", 0),
            summaries=roles.get("summarize_description", 0),
            basis=ROLES_BASIS.get(llm.basis, ""),
        )
    return str(text + took)


def create_form() -> None:
    gen = st.session_state["build-generation"]
    with st.container(border=True):
        st.subheader(T.CREATE_TITLE)
        name = st.text_input(T.NAME, key=f"create-name-{gen}", help=T.NAME_HELP)
        files = st.file_uploader(
            T.FILES, T.FILE_TYPES, accept_multiple_files=True, key=f"create-files-{gen}"
        )
        st.caption(T.FILES_HELP)
        mode = st.radio(
            T.MODE, MODES, format_func=MODE_LABELS.get, captions=mode_captions(files), key="mode"
        )
        tags = st.text_input(T.TAGS, key=f"create-tags-{gen}", placeholder=T.TAGS_HELP)
        description = st.text_area(T.DESCRIPTION, key=f"create-description-{gen}", height=80)
        if st.button(T.CREATE, type="primary", key="create-submit"):
            create(name.strip(), files, mode, tags, description.strip())


def create(name: str, files: Any, mode: str, tags: str, description: str) -> None:
    """Check the input first, so that bad input creates nothing."""
    if not name:
        st.error(T.NEED_NAME)
    elif name in kb_names(service):
        st.error(inert(T.DUPLICATE_NAME.format(name=name)))
    elif not files:
        st.error(T.NEED_FILES)
    else:
        tag_list = [t.strip() for t in tags.replace("，", ",").split(",") if t.strip()]
        try:
            service.kbs.create(name, mode=mode, tags=tag_list, description=description)
        except ZhixingError as exc:
            show_error(exc)
            return
        try:
            service.builds.start(name, uploads(files))
        except ZhixingError as exc:
            if service.kbs.documents(name):  # no file was readable: each is listed with its reason
                flash(T.CREATED_NONE_READABLE.format(name=name, error=exc), warning=True)
            service.kbs.delete(name)  # no half-made knowledge base without its documents
            show_error(exc)
            return
        flash(T.CREATED.format(name=name))


def log_text(view: JobView, lines: int | None = None) -> str:
    log = view.log[-lines:] if lines else view.log
    return "\n".join(
        f"{time.strftime('%H:%M:%S', time.localtime(line.at))}  "
        + stage_text(line.stage, line.step, line.steps, line.message)
        for line in log
    )


def job_header(view: JobView) -> str:
    state = {
        "running": T.STATE_RUNNING,
        "paused": T.STATE_PAUSED,
        "done": T.STATE_DONE,
        "failed": T.STATE_FAILED,
        "cancelled": T.STATE_CANCELLED,
        "interrupted": T.STATE_INTERRUPTED,
    }[view.state]
    return str(T.JOB_LABEL.format(kb=view.kb, files=len(view.files), state=state))


@st.fragment(run_every=1.0)
def live_job(job_id: str) -> None:
    """Refresh a running job every second; rerun the page once it ends (documents changed)."""
    view = service.builds.job(job_id)
    if view is None or not view.running:
        st.rerun()
    with st.container(border=True):
        st.markdown(inert(f"**{job_header(view)}**"))
        # The time left at the rate measured so far; none until there is enough to measure.
        eta = T.ETA.format(time=duration_text(view.eta_s)) if view.eta_s else T.ETA_MEASURING
        text = T.PROGRESS.format(
            stage=stage_now(view.stage, view.step, view.steps),
            done=view.done,
            total=view.total,
            embedded=view.embedded,
            queued=view.queued,
            chunks=view.chunks,
            eta=eta,
        )
        st.progress(view.fraction, text=text)
        if view.elsewhere:  # another process runs it: its row has no log
            st.caption(inert(T.ELSEWHERE.format(owner=view.elsewhere)))
        else:
            st.code(log_text(view, TAIL), language=None)
            with st.expander(T.LOG_FULL.format(lines=len(view.log))):
                st.code(log_text(view), language=None)
        if view.cancel_requested:
            st.caption(T.CANCELLING)
        elif service.actor.can("build"):  # core checks it again: a viewer may only watch
            st.button(T.CANCEL, key=f"cancel-{job_id}", on_click=guarded, args=(cancel(job_id),))


def interrupted_job(view: JobView) -> None:
    """A build whose process (another instance's, a command's) died: this instance may take
    it over."""
    with st.container(border=True):
        st.markdown(inert(f"**{job_header(view)}**"))
        st.warning(inert(T.INTERRUPTED_ELSEWHERE.format(owner=view.elsewhere)))
        if service.actor.can("build"):
            take = lambda: service.builds.resume(view.id)  # noqa: E731
            st.button(T.TAKE_OVER, key=f"take-{view.id}", on_click=guarded, args=(take,))


def finished_job(view: JobView) -> None:
    with st.container(border=True):
        st.markdown(inert(f"**{job_header(view)}**"))
        report = view.report
        if view.state == "failed":
            st.error(inert(view.error))
        if view.state == "cancelled" and report is not None:
            cancelled(view.id, report)
        elif report is not None:
            summary = T.SUMMARY.format(
                added=len(report.added),
                replaced=len(report.replaced),
                skipped=len(report.skipped),
                failed=len(report.failed),
                chunks=report.chunks,
                seconds=report.seconds,
            )
            (st.warning if report.failed else st.success)(summary)
            for failure in report.failed:
                st.caption(inert(T.FAILED_ITEM.format(source=failure.source, error=failure.error)))
            for warning in report.warnings:
                st.caption(inert(warning))
            if report.fallbacks:
                reasons = "; ".join(f"{why} × {n}" for why, n in report.fallbacks.items())
                text = T.FALLBACKS_OFFLINE if report.offline else T.FALLBACKS
                st.caption(
                    inert(
                        text.format(count=report.degraded, reasons=reasons, offline=report.offline)
                    )
                )
            if report.rejected:
                parts = "; ".join(f"{what} × {n}" for what, n in list(report.rejected.items())[:6])
                count = sum(report.rejected.values())
                st.caption(inert(T.REJECTED.format(count=count, parts=parts)))
            if view.state == "done" and (report.added or report.replaced or report.skipped):
                ready(view.kb)
        elif view.state == "cancelled":
            st.info(T.CANCELLED_NOTE)
        with st.expander(T.LOG_FULL.format(lines=len(view.log))):
            st.code(log_text(view), language=None)
        if service.actor.can("build"):
            dismiss = lambda: service.builds.dismiss(view.id)  # noqa: E731
            st.button(T.DISMISS, key=f"dismiss-{view.id}", on_click=guarded, args=(dismiss,))


def cancelled(job_id: str, report: BuildReport) -> None:
    """What a cancel kept and what it left, and the control that builds the rest."""
    numbers = {"indexed": report.indexed, "chunks": report.chunks, "left": report.left}
    if not report.left:
        st.info(T.CANCELLED_ALL.format(**numbers))
        return
    st.warning(T.CANCELLED_SUMMARY.format(**numbers))
    st.caption(T.CANCELLED_LEFT)
    if service.actor.can("build"):
        resume = lambda: service.builds.resume(job_id)  # noqa: E731
        st.button(T.RESUME, key=f"resume-{job_id}", on_click=guarded, args=(resume,))


def ready(kb: str) -> None:
    """Say that a knowledge base can be used now, and where to go next."""
    graph = guarded(lambda: service.kbs.get(kb).mode == "graph")
    st.success(inert(T.READY.format(kb=kb) + (T.READY_GRAPH if graph else "")))
    recall, graph_link = st.columns(2)
    recall.page_link(RECALL_PAGE, label=T.TRY_RECALL, icon="🔎")
    if graph:
        graph_link.page_link(GRAPH_PAGE, label=T.TRY_GRAPH, icon="🕸️")


def cancel(job_id: str) -> Callable[[], None]:
    return lambda: service.builds.cancel(job_id)


@st.fragment(run_every=5.0)
def watch_elsewhere(shown: tuple[str, ...]) -> None:
    """Rerun the page when another process starts or loses a build (this page shows `shown`)."""
    now = tuple(v.id for v in service.builds.jobs() if v.elsewhere)
    if now != shown:
        st.rerun()


def jobs_panel() -> None:
    """The builds of the knowledge bases this user may see (the service filters them)."""
    views = service.builds.jobs()
    if views:
        st.subheader(T.JOBS_TITLE)
    watch_elsewhere(tuple(v.id for v in views if v.elsewhere))
    for view in views:
        if view.running:
            live_job(view.id)
        elif view.elsewhere:
            interrupted_job(view)
        else:
            finished_job(view)


def kb_table() -> str | None:
    """The knowledge bases, filtered by tag; returns the one picked for a closer look."""
    overview = {s.kb.name: s for s in service.kbs.overview()}
    kbs = [s.kb for s in overview.values()]
    st.subheader(T.KBS_TITLE)
    all_tags = sorted({t for kb in kbs for t in kb.tags})
    chosen = st.multiselect(T.FILTER_TAGS, all_tags, key="kb-tags") if all_tags else []
    shown = [kb for kb in kbs if not chosen or set(chosen) & set(kb.tags)]
    if not shown:
        st.info(T.NO_MATCH)
        return None
    rows = []
    for kb in shown:
        counts = overview[kb.name]
        values: list[object] = [kb.name, T.MODE_NAMES.get(kb.mode, kb.mode), ", ".join(kb.tags)]
        values += [counts.documents, counts.chunks, kb.description]
        rows.append(dict(zip(T.KB_COLUMNS.values(), values, strict=True)))
    st.dataframe(rows, hide_index=True, key="kb-table")
    return st.selectbox(T.PICK_KB, [kb.name for kb in shown], key="kb-pick")


def documents_panel(name: str) -> None:
    gen = st.session_state["build-generation"]
    st.markdown(inert(f"#### {T.DOCS_TITLE.format(name=name)}"))
    docs = guarded(lambda: service.kbs.documents(name)) or []
    if docs:
        fields = list(T.DOC_COLUMNS)
        rows = [{T.DOC_COLUMNS[f]: getattr(d, f) for f in fields} for d in docs]
        st.dataframe(rows, hide_index=True, key="doc-table")
    else:
        st.caption(T.NO_DOCS)
    busy = service.builds.running(name) is not None
    if busy:
        st.info(inert(T.BUSY.format(kb=name)))
    if not service.actor.can("build"):
        st.caption(SHELL.READ_ONLY.format(role=service.actor.role))
        return
    added = st.file_uploader(
        T.ADD_FILES, T.FILE_TYPES, accept_multiple_files=True, key=f"add-files-{name}-{gen}"
    )
    if st.button(T.ADD, key="add-submit", disabled=busy or not added):
        act(
            lambda: service.builds.start(name, uploads(added)),
            T.ADD_STARTED.format(name=name, count=len(added)),
        )
    if docs:
        source = st.selectbox(T.REMOVE_PICK, [d.source for d in docs], key=f"remove-{name}")
        if st.button(T.REMOVE, key="remove-submit", disabled=busy):

            def remove() -> None:
                service.builds.check_idle(name)
                service.builds.remove(name, source)

            act(remove, T.REMOVED.format(source=source))
    if not service.actor.can("admin"):
        return
    with st.expander(T.DELETE_TITLE):
        label = inert(T.DELETE_CONFIRM.format(name=name))
        confirm = st.checkbox(label, key=f"delete-confirm-{name}")
        if st.button(T.DELETE, key="delete-submit", disabled=busy or not confirm):

            def delete() -> None:
                service.builds.check_idle(name)
                service.kbs.delete(name)

            act(delete, T.DELETED.format(name=name))


st.title(T.TITLE)
if flashed := st.session_state.pop("build-flash", None):
    message, warning = flashed
    (st.warning if warning else st.success)(inert(message))
if sample := st.session_state.pop(SAMPLE_READY, None):  # built by the empty state's button
    ready(sample)
has_kbs = empty_state(service)
if service.actor.can("build"):
    create_form()
jobs_panel()
if has_kbs and (picked := kb_table()):
    documents_panel(picked)
