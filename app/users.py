"""The settings page's users section (admins only): users and roles, who may see each
knowledge base, and the audit log. Every change goes through the service, which checks the
role and writes the audit log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import streamlit as st

from ..core.service import ROLES, KnowledgeService
from .strings import settings as T
from .widgets import guarded, inert

__all__ = ["users_section"]


def users_section(service: KnowledgeService) -> None:
    st.divider()
    st.subheader(T.USERS_HEADER)
    st.caption(T.USERS_INTRO)
    users = guarded(service.users.all) or []
    if users:
        st.dataframe(
            [
                {"user": u.name, "role": u.role, "login": "password" if u.password_hash else "SSO"}
                for u in users
            ],
            hide_index=True,
        )
    else:
        st.caption(T.USERS_NONE)
    _user_form(service)
    if users:
        _remove_form(service, [u.name for u in users])
        _members_form(service, [u.name for u in users])
    _audit(service)


def _user_form(service: KnowledgeService) -> None:
    with st.form("user-add", clear_on_submit=True):
        name = st.text_input(T.USER_NAME, key="user-name")
        role = st.selectbox(T.USER_ROLE, ROLES, key="user-role")
        password = st.text_input(T.USER_PASSWORD, type="password", key="user-password")
        sso = st.checkbox(T.USER_SSO, key="user-sso")
        if st.form_submit_button(T.USER_SAVE):
            user = guarded(lambda: service.users.add(name, role, None if sso else password))
            if user is not None:
                st.success(inert(T.USER_SAVED.format(name=user.name, role=user.role)))


def _remove_form(service: KnowledgeService, names: list[str]) -> None:
    with st.form("user-remove"):
        name = st.selectbox(T.USER_REMOVE, names, key="user-remove-name")
        if (
            st.form_submit_button(T.USER_REMOVE_BUTTON)
            and name
            and guarded(_remover(service, name))
        ):
            st.success(inert(T.USER_REMOVED.format(name=name)))


def _remover(service: KnowledgeService, name: str) -> Callable[[], bool]:
    """Remove a user; True once done (`guarded` turns a refusal into a message and None)."""

    def remove() -> bool:
        service.users.remove(name)
        return True

    return remove


def _members_form(service: KnowledgeService, names: list[str]) -> None:
    kbs = [kb.name for kb in service.kbs.all()]
    if not kbs:
        return
    st.subheader(T.MEMBERS_HEADER)
    kb = st.selectbox(T.MEMBERS_KB, kbs, key="members-kb")
    current = guarded(lambda: service.kbs.members(kb)) or []
    with st.form("members"):
        chosen = st.multiselect(
            T.MEMBERS_USERS, names, default=[n for n in current if n in names], key=f"m-{kb}"
        )
        if st.form_submit_button(T.MEMBERS_SAVE) and (
            guarded(lambda: service.kbs.restrict(kb, chosen)) is not None
        ):
            st.success(inert(T.MEMBERS_SAVED.format(name=kb)))


def _audit(service: KnowledgeService) -> None:
    st.subheader(T.AUDIT_HEADER)
    entries = guarded(lambda: service.admin.audit_log(100)) or []
    if not entries:
        st.caption(T.AUDIT_NONE)
        return
    st.dataframe(
        [
            {
                "when": datetime.fromtimestamp(e.at).isoformat(sep=" ", timespec="seconds"),
                "user": e.user,
                "action": e.action,
                "target": e.target,
                "detail": ", ".join(f"{k}={v}" for k, v in e.detail.items()),
            }
            for e in entries
        ],
        hide_index=True,
    )
