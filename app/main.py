"""Zhixing's Streamlit entry point: page navigation (the real pages arrive with the UI issue)."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run app/main.py` puts app/ on the path, not the project root.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

st.set_page_config(page_title="知行 Zhixing", page_icon="📚", layout="wide")

navigation = st.navigation(
    [st.Page(ROOT / "pages" / "home.py", title="知识库 Knowledge bases", icon="📚", default=True)]
)
navigation.run()
