"""The account page's access tokens, for MCP clients of `zhixing mcp --http`: a signed-in user
makes one for themself (shown once, with the client configuration that uses it), lists and
revokes theirs; an admin lists and revokes everyone's. Whose tokens are listed, and which may
be revoked, is the service's access policy's; this section only shows what it hands out."""

from __future__ import annotations

import json
from datetime import datetime

import streamlit as st

from ..core.service import (
    DEFAULT_TOKEN_DAYS,
    MAX_TOKEN_DAYS,
    MCP_PATH,
    MCP_PORT,
    IssuedToken,
    KnowledgeService,
)
from .strings import account as T
from .widgets import guarded, inert

__all__ = ["client_config", "tokens_section"]

REVOKED_KEY = "token-revoked"  # session key: the sentence that says which token was revoked


def client_config(token: str) -> str:
    """The `mcpServers` entry (Claude Code's `.mcp.json`, Cursor's `mcp.json`) of a client that
    signs in with `token` to `zhixing mcp --http` at its default address."""
    server = {
        "type": "http",
        "url": f"http://127.0.0.1:{MCP_PORT}{MCP_PATH}",
        "headers": {"Authorization": f"Bearer {token}"},
    }
    return json.dumps({"mcpServers": {"zhixing": server}}, indent=2)


def tokens_section(service: KnowledgeService) -> None:
    st.subheader(T.TOKENS_HEADER)
    st.caption(T.TOKENS_INTRO)
    revoked = st.session_state.pop(REVOKED_KEY, None)
    if revoked:
        st.success(inert(revoked))
    if service.actor.local:
        st.info(T.TOKENS_LOCAL)
    else:
        _create_form(service)
    st.subheader(T.TOKENS_ALL if service.actor.can("admin") else T.TOKENS_MINE)
    tokens = guarded(service.tokens.all) or []
    if not tokens:
        st.caption(T.TOKENS_NONE)
        return
    columns = T.COLUMNS
    st.dataframe(
        [
            {
                columns["id"]: t.id,
                columns["user"]: t.user,
                columns["label"]: t.label,
                columns["created"]: _when(t.created_at),
                columns["expires"]: _when(t.expires_at),
                columns["last_used"]: _when(t.last_used_at),
            }
            for t in tokens
        ],
        hide_index=True,
    )
    _revoke_form(service, {t.id: f"{t.id} · {t.label or '—'} · {t.user}" for t in tokens})


def _when(at: float | None) -> str:
    return datetime.fromtimestamp(at).isoformat(sep=" ", timespec="minutes") if at else T.NEVER


def _create_form(service: KnowledgeService) -> None:
    with st.form("token-create", clear_on_submit=True):
        label = st.text_input(T.TOKEN_LABEL, key="token-label")
        days = st.number_input(
            T.TOKEN_DAYS,
            min_value=1,
            max_value=MAX_TOKEN_DAYS,
            value=DEFAULT_TOKEN_DAYS,
            key="token-days",
        )
        made = st.form_submit_button(T.TOKEN_CREATE)
    if made:
        issued = guarded(lambda: service.tokens.create(label, int(days)))
        if issued is not None:
            _show_once(issued)


def _show_once(issued: IssuedToken) -> None:
    """The token and its client configuration, in this run only: nothing keeps them, so the
    next click shows them no more."""
    until = _when(issued.stored.expires_at)
    st.success(T.TOKEN_CREATED.format(id=issued.stored.id, until=until))
    st.code(issued.token, language=None)
    st.caption(T.TOKEN_CONFIG)
    st.code(client_config(issued.token), language="json")


def _revoke_form(service: KnowledgeService, shown: dict[int, str]) -> None:
    with st.form("token-revoke"):
        chosen = st.selectbox(
            T.TOKEN_REVOKE, list(shown), format_func=shown.__getitem__, key="token-id"
        )
        if st.form_submit_button(T.TOKEN_REVOKE_BUTTON) and chosen is not None:
            revoked = guarded(lambda: service.tokens.revoke(chosen))
            if revoked is not None:
                # Said on the next run, whose list no longer holds it.
                st.session_state[REVOKED_KEY] = T.TOKEN_REVOKED.format(
                    id=revoked.id, user=revoked.user
                )
                st.rerun()
