"""Home: the knowledge bases in this Zhixing home, with their size."""

from __future__ import annotations

import streamlit as st

from app.services import knowledge_service
from core.errors import ZhixingError

st.title("知行 Zhixing")
st.caption("A local-first knowledge base with an agent built in.")

try:
    service = knowledge_service()
except ZhixingError as exc:
    st.error(str(exc))
    st.stop()

kbs = service.list_kbs()
if not kbs:
    st.info(
        "No knowledge base yet. Create one with `zhixing kb create NAME` and add documents "
        "with `zhixing add NAME PATH…`; the build page arrives in the next release."
    )
    st.stop()

rows = []
for kb in kbs:
    documents, chunks = service.catalog.kb_counts(kb.id)
    rows.append(
        {
            "name": kb.name,
            "mode": kb.mode,
            "documents": documents,
            "chunks": chunks,
            "tags": ", ".join(kb.tags),
            "description": kb.description,
        }
    )
st.dataframe(rows, hide_index=True, width="stretch")
