"""Zhixing's Streamlit entry point: the shell (sidebar, navigation) around the five pages."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run app/main.py` puts app/ on the path, not the project root.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.services import knowledge_service  # noqa: E402
from app.strings import shell as T  # noqa: E402
from app.widgets import sidebar  # noqa: E402
from core.errors import ZhixingError  # noqa: E402

st.set_page_config(page_title=T.APP_TITLE, page_icon="📚", layout="wide")

PAGES = ROOT / "pages"
navigation = st.navigation(
    [
        st.Page(PAGES / "build.py", title=T.NAV_BUILD, icon="🧱", default=True),
        st.Page(PAGES / "graph.py", title=T.NAV_GRAPH, icon="🕸️"),
        st.Page(PAGES / "recall.py", title=T.NAV_RECALL, icon="🔎"),
        st.Page(PAGES / "agent.py", title=T.NAV_AGENT, icon="🤖"),
        st.Page(PAGES / "settings.py", title=T.NAV_SETTINGS, icon="⚙️"),
    ]
)
try:
    sidebar(knowledge_service())
except ZhixingError as exc:
    st.error(T.SERVICE_ERROR.format(error=exc))
    st.stop()
navigation.run()
