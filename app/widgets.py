"""Small widgets every page shares: readable errors, the sidebar, the knowledge-base picker."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from ..core.errors import ZhixingError
from ..core.service import KnowledgeService, ProgressEvent
from .background import stage_text
from .services import session_service
from .strings import shell as T

R = TypeVar("R")


# WORD JOINER (U+2060): shows as nothing and joins no words apart, but no Markdown syntax
# reads across it. A backslash escape is not enough for links: Streamlit's GFM finds autolinks
# (`https://…`, `www.…`, `a@b.c`) in the text after escapes and entities are decoded, and a
# backslash shows as itself inside `code`; the joiner does neither.
_JOINER = "\u2060"
_DEFUSE = re.compile(
    r"\](?=[(\[:])"  # [text](url), [text][ref], [ref]: url, ![image](src)
    r"|<(?=[A-Za-z][A-Za-z0-9+.-]{1,31}:)"  # <ftp://…>, <any-scheme:…> (CommonMark autolinks)
    r"|&(?=#?[0-9A-Za-z]+;)"  # &#58; and &colon; decode to the letters the rules below break
    r"|(?i:https?)(?=\\?:)"  # https://… (an escaped colon decodes to a colon first)
    r"|(?i:www)(?=\\?\.)"  # www.…
    r"|(?<=[-.+\w])(?=\\?@)",  # a@b.c, mailto:a@b.c
)


def inert(text: object) -> str:
    """Markdown that holds names, document text or LLM output, made harmless to show.

    Streamlit already shows HTML inside Markdown as text (`<img onerror=…>` stays visible
    letters) and drops `javascript:` links, but it renders every other link: a document's
    `[sign in again](https://evil.test)`, `<https://evil.test>`, a bare `https://evil.test`
    or `www.evil.test`, an image `![](http://…)` that every reader's browser would fetch.
    An invisible word joiner goes where each would start, so they all show as the text they
    are; bold, lists and headings still render. Applying it twice changes nothing more.
    """
    return _DEFUSE.sub(lambda m: m.group(0) + _JOINER, str(text))


def show_error(exc: BaseException) -> None:
    """A readable sentence, never a traceback: Zhixing's own errors already are one."""
    message = str(exc) if isinstance(exc, ZhixingError) else f"{type(exc).__name__}: {exc}"
    st.error(inert(f"{T.ERROR_PREFIX}{message}"))


def guarded(fn: Callable[[], R]) -> R | None:
    """Run `fn`; show a failure as a readable message and return None."""
    try:
        return fn()
    except ZhixingError as exc:
        show_error(exc)
        return None


def sidebar(service: KnowledgeService) -> None:
    """Knowledge bases, LLM mode and embedding model, on every page."""
    settings = service.settings
    with st.sidebar:
        st.subheader(T.SIDEBAR_KBS)
        kbs = service.kbs.overview()
        if not kbs:
            st.caption(T.SIDEBAR_NO_KB)
        for s in kbs:
            # The counts are of indexed documents: a build's documents join them batch by batch.
            job = service.builds.running(s.kb.name)
            line = T.SIDEBAR_KB_BUILDING if job else T.SIDEBAR_KB_LINE
            done, total = (job.done, job.total) if job else (0, 0)
            line = line.format(
                name=s.kb.name, documents=s.documents, chunks=s.chunks, done=done, total=total
            )
            st.caption(inert(line))
        st.subheader(T.SIDEBAR_LLM)
        if settings.llm_configured:
            st.caption(
                inert(
                    T.SIDEBAR_LLM_ONLINE.format(
                        model=settings.chat_model, endpoint=settings.openai_base_url
                    )
                )
            )
        else:
            st.caption(T.SIDEBAR_LLM_OFFLINE)
        st.subheader(T.SIDEBAR_EMBEDDING)
        st.caption(service.embedder.name)


def kb_names(service: KnowledgeService) -> list[str]:
    return [kb.name for kb in service.kbs.all()]


ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "app" / "samples"
# The task agent's showcase (docs/architecture.md §7) audits samples/springboot-shop against this guideline.
SAMPLE_GUIDELINE = ROOT / "samples" / "java-secure-coding-guideline.md"
# Session key: the sample knowledge base just built, for the build page to say it is ready
# (the empty state reruns the page, which would lose a message shown before).
SAMPLE_READY = "sample-ready"


def empty_state(service: KnowledgeService) -> bool:
    """With no knowledge base yet: explain, and offer to build the shipped sample.

    Returns True when the page can go on (a knowledge base exists), False after showing the
    empty state.
    """
    if service.kbs.all():
        return True
    st.subheader(T.EMPTY_TITLE)
    st.info(T.EMPTY_BODY)
    if service.actor.can("build") and st.button(
        T.EMPTY_SAMPLE_BUTTON, type="primary", key="build-sample"
    ):
        build_sample(service)
        st.rerun()
    return False


def open_page(title: str, caption: str) -> tuple[KnowledgeService, list[str]]:
    """Head a page that works over knowledge bases: the session's service and its knowledge
    bases' names, under the title and caption; with none yet, the empty state ends the page."""
    service = session_service()
    st.title(title)
    st.caption(caption)
    if not empty_state(service):
        st.stop()
    return service, kb_names(service)


def build_sample(service: KnowledgeService) -> None:
    """Build the sample knowledge base from app/samples, in graph mode, showing its stages."""
    ctx = get_script_run_ctx()

    def write(event: ProgressEvent) -> None:
        # The pipeline reports from its worker threads: lend them this script's context.
        if get_script_run_ctx() is None:
            add_script_run_ctx(threading.current_thread(), ctx)
        status.write(inert(stage_text(event.stage, event.step, event.steps, event.message)))

    with st.status(T.SAMPLE_BUILDING, expanded=True) as status:
        try:
            service.kbs.create(T.SAMPLE_KB_NAME, mode="graph", description=T.SAMPLE_KB_DESCRIPTION)
            documents = [*sorted(SAMPLES.glob("*.md")), SAMPLE_GUIDELINE]
            report = service.builds.add(T.SAMPLE_KB_NAME, documents, on_event=write)
        except ZhixingError as exc:
            status.update(state="error")
            show_error(exc)
            return
        status.update(
            label=T.SAMPLE_DONE.format(documents=len(report.added), chunks=report.chunks),
            state="complete",
            expanded=False,
        )
        st.session_state[SAMPLE_READY] = T.SAMPLE_KB_NAME
