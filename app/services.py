"""The one place that wires core objects for the app, cached for the server's lifetime."""

from __future__ import annotations

import threading

import streamlit as st

from ..core.config import Settings
from ..core.service import Embedder, KnowledgeService, make_embedder, owner_only_umask
from .background import build_jobs

# Held while the shared service is swapped, and while a new one opens: Milvus Lite lets one
# client open its file, so a page run asking for the service mid-swap waits for the old to close.
_swap_lock = threading.Lock()
_reload_pending = False  # a reload waits for the running builds to end (under _swap_lock)


@st.cache_resource(show_spinner="正在加载向量模型 Loading the embedding model…")
def embedder() -> Embedder:
    """The embedding model, loaded once per server process (loading is the slow part)."""
    return make_embedder(Settings.from_env())


@st.cache_resource(show_spinner="正在打开知识库 Opening the knowledge base…")
def knowledge_service() -> KnowledgeService:
    """One service per server process: Milvus Lite lets only one process open its file."""
    with _swap_lock:
        owner_only_umask()  # all the server writes in the home is its owner's alone
        return KnowledgeService(Settings.from_env(), embedder=embedder(), jobs=build_jobs())


def reload_when_idle(service: KnowledgeService) -> bool:
    """Reopen the shared service (and the embedder) with the saved settings once no build is
    running; return whether that happened now. `service` is the shared one (or a view of it).

    A running build keeps the service it started with and ends normally; the last one to end
    closes it, and the next page run opens the new one. Asking again while a reload waits
    changes nothing: that reload reads the settings saved last."""
    global _reload_pending
    with _swap_lock:
        if _reload_pending:
            return False
        _reload_pending = True

    def swap() -> None:
        global _reload_pending
        with _swap_lock:
            _reload_pending = False
            knowledge_service.clear()
            embedder.clear()
            service.close()

    return service.builds.when_idle(swap)


ACTOR_KEY = "zhixing-actor"  # the User the login gate found for this session's current run


def session_service() -> KnowledgeService:
    """The shared service acting for this session's user (core checks every call).

    main.py's login gate sets the user on each run before any page runs; a page reached
    without it acts as nobody and stops."""
    user = st.session_state.get(ACTOR_KEY)
    if user is None:
        st.stop()
    return knowledge_service().as_user(user)
