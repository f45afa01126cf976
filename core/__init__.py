"""Zhixing (知行): the engine. Never imports Streamlit."""

__version__ = "0.1.0"
