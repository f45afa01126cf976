"""The Streamlit app: entry point, service wiring and shared widgets."""
