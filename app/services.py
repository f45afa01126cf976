"""The one place that wires core objects for the app, cached for the server's lifetime."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.service import KnowledgeService


@st.cache_resource(show_spinner="Opening the knowledge base…")
def knowledge_service() -> KnowledgeService:
    """One service per server process: Milvus Lite lets only one process open its file."""
    return KnowledgeService(Settings.from_env())
