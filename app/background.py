"""The server process's registry of background builds (core/build/background.py), made once
and handed to every service the app opens, so builds outlive a reopened service; and a build's
stages in the page's words."""

from __future__ import annotations

import streamlit as st

from ..core.service import BuildJobs, KnowledgeService
from .strings import build as T

__all__ = ["build_jobs", "resume_interrupted_once", "stage_now", "stage_text"]


@st.cache_resource
def build_jobs() -> BuildJobs:
    """The server process's build jobs, shared by every session and page."""
    return BuildJobs()


@st.cache_resource
def resume_interrupted_once(_service: KnowledgeService) -> int:
    """Restart the builds a crash interrupted, once per server process; return how many.

    (`_service` is not hashed by Streamlit: one call per process, whatever service is passed.)
    """
    return len(_service.builds.resume_all())


def stage_text(stage: str, step: int = 0, steps: int = 0, message: str = "") -> str:
    """A job log line or a build event as a sentence (app/strings/build.py); a stage the
    strings do not know keeps the pipeline's own message."""
    template = T.STAGE_TEXT.get(stage)
    return message if template is None else template.format(step=step, steps=steps, message=message)


def stage_now(stage: str, step: int = 0, steps: int = 0) -> str:
    """What a running build is doing, for its progress bar."""
    template = T.STAGE_NOW.get(stage, stage)
    return str(template.format(step=step, steps=steps))
