"""The server process's registry of background builds (core/build/background.py), made once
and handed to every service the app opens, so builds outlive a reopened service."""

from __future__ import annotations

import streamlit as st

from core.service import BuildJobs, KnowledgeService

__all__ = ["build_jobs", "resume_interrupted_once"]


@st.cache_resource
def build_jobs() -> BuildJobs:
    """The server process's build jobs, shared by every session and page."""
    return BuildJobs()


@st.cache_resource
def resume_interrupted_once(_service: KnowledgeService) -> int:
    """Restart the builds a crash interrupted, once per server process; return how many.

    (`_service` is not hashed by Streamlit: one call per process, whatever service is passed.)
    """
    return len(_service.resume_builds())
