"""The one place that wires core objects for the app, cached for the server's lifetime."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.embed import Embedder, make_embedder
from core.service import KnowledgeService


@st.cache_resource(show_spinner="正在加载向量模型 Loading the embedding model…")
def embedder() -> Embedder:
    """The embedding model, loaded once per server process (loading is the slow part)."""
    return make_embedder(Settings.from_env())


@st.cache_resource(show_spinner="正在打开知识库 Opening the knowledge base…")
def knowledge_service() -> KnowledgeService:
    """One service per server process: Milvus Lite lets only one process open its file."""
    return KnowledgeService(Settings.from_env(), embedder=embedder())


ACTOR_KEY = "zhixing-actor"  # the User the login gate found for this session's current run


def session_service() -> KnowledgeService:
    """The shared service acting for this session's user (core checks every call).

    main.py's login gate sets the user on each run before any page runs; a page reached
    without it acts as nobody and stops."""
    user = st.session_state.get(ACTOR_KEY)
    if user is None:
        st.stop()
    return knowledge_service().as_user(user)
