"""账户: who is signed in, and their access tokens for MCP clients (app/tokens.py). Listed for
every signed-in user; an admin also sees and revokes everyone's tokens. The service decides
whose tokens this shows and which may be revoked (core/service/access.py)."""

from __future__ import annotations

import streamlit as st

from zhixing.app.services import session_service
from zhixing.app.strings import account as T
from zhixing.app.tokens import tokens_section
from zhixing.app.widgets import inert

service = session_service()
actor = service.actor

st.title(T.TITLE)
if actor.local:
    st.caption(T.LOCAL)
else:
    st.caption(inert(T.SIGNED_IN.format(name=actor.name, role=actor.role)))
tokens_section(service)
