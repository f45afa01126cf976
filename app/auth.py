"""The login gate (docs/architecture.md §10): who is using this session, and the form that signs them in.

Localhost needs no login: the session acts as the local operator, but only for a browser that
reached it by a loopback name (`local_request`); under any other Host, a page loaded through DNS
rebinding, the app shows one sentence and nothing else. A server reachable from
other machines (`zhixing serve --host 0.0.0.0`, or any non-loopback `server.address`) needs
one: Streamlit's OIDC `st.login` when `[auth]` is configured in secrets.toml, else the built-in
users of `zhixing user add`. Every page then acts through `session_service()`, whose checks are
in core — the role decides what the pages offer, core decides what they may do.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import streamlit as st
from streamlit.runtime.state.common import TESTING_KEY

from ..core.errors import AccessError
from ..core.service import LOCAL, KnowledgeService, User, is_loopback
from .strings import shell as T
from .widgets import inert

__all__ = [
    "current_user",
    "is_loopback_host",
    "local_request",
    "login_required",
    "require_login",
    "sign_out",
]

USER_KEY = "zhixing-user"  # the signed-in name (built-in login)
# Identities from the identity provider that no `zhixing user add` names get this role.
OIDC_DEFAULT_ROLE = "viewer"


def login_required(service: KnowledgeService) -> bool:
    address = st.get_option("server.address")
    # No address at all means every interface: that is not localhost.
    return service.settings.auth_required or not (address and is_loopback(str(address)))


# A Host header: a name or an IPv4 address, or an IPv6 address in brackets; then a port.
_HOST = re.compile(r"(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9.-]+))(?::[0-9]{1,5})?")


def is_loopback_host(host: str) -> bool:
    """Whether a Host header names this machine only: localhost, *.localhost (RFC 6761:
    browsers resolve those themselves), 127.0.0.0/8 or [::1], with or without a port."""
    match = _HOST.fullmatch(host.strip().lower())
    if match is None:
        return False
    if match["ipv6"] is not None:
        return is_loopback(match["ipv6"])
    name = match["name"]
    return name == "localhost" or name.endswith(".localhost") or is_loopback(name)


def local_request() -> bool:
    """Whether this run comes from a browser that reached the app by a loopback name.

    A page that DNS rebinding moved onto 127.0.0.1 still sends its own name as the Host of the
    app's websocket (Streamlit's origin check passes: the Origin names the same host). An
    Origin, when sent, must be a loopback one too: a page elsewhere that opens the websocket
    with CORS turned off gets no more. A run with no request at all is AppTest's; a real one
    without headers (its browser gone) gets nothing either."""
    headers = st.context.headers
    if not headers:
        return TESTING_KEY in st.session_state
    origins = headers.get_all("origin")
    if not all(is_loopback_host(urlsplit(origin).netloc) for origin in origins):
        return False
    hosts = headers.get_all("host")
    return bool(hosts) and all(is_loopback_host(host) for host in hosts)


def current_user(service: KnowledgeService) -> User | None:
    """Who this session acts as, or None when a login is needed and nobody is signed in (or,
    without logins, when the browser did not come by a loopback name).

    The role is read from the user store on every run, so a changed role or a removed user
    takes effect at the next click."""
    if not login_required(service):
        return LOCAL if local_request() else None
    if _oidc_configured():
        if not st.user.get("is_logged_in", False):
            return None
        identity = str(st.user.get("email") or st.user.get("sub") or "")
        return service.users.identity_user(identity, OIDC_DEFAULT_ROLE)
    user = service.users.session_user(st.session_state.get(USER_KEY) or "")
    if user is None:
        st.session_state.pop(USER_KEY, None)
    return user


def require_login(service: KnowledgeService) -> User:
    """The session's user; shows the login (and stops the run) when there is none yet."""
    user = current_user(service)
    if user is not None:
        return user
    if not login_required(service):  # another name for a localhost app: nothing but this
        st.warning(T.LOCAL_ONLY)
        st.stop()
    _, middle, _ = st.columns([1, 2, 1])  # a narrow form on the wide layout
    with middle:
        _login_form(service)
    st.stop()
    raise AssertionError("st.stop() returns only under test")  # pragma: no cover


def _login_form(service: KnowledgeService) -> None:
    st.title(T.LOGIN_TITLE)
    st.caption(T.TAGLINE)
    if _oidc_configured():
        st.caption(T.LOGIN_OIDC_INTRO)
        if st.button(T.LOGIN_OIDC_BUTTON, type="primary", key="login-oidc"):
            st.login()
        return
    if not service.users.password_logins():
        st.error(T.LOGIN_NO_USERS)
        return
    with st.form("login"):
        name = st.text_input(T.LOGIN_NAME, key="login-name")
        password = st.text_input(T.LOGIN_PASSWORD, type="password", key="login-password")
        submitted = st.form_submit_button(T.LOGIN_BUTTON, type="primary")
    if submitted:
        try:
            address = st.context.ip_address  # None without a client (and not a str under test)
            client = address if isinstance(address, str) else ""
            user = service.users.sign_in(name, password, client=client)
        except AccessError as exc:
            st.error(inert(exc))
        else:
            st.session_state[USER_KEY] = user.name
            st.rerun()


def sign_out(user: User) -> None:
    """The sidebar's line: who is signed in, and the button that signs them out."""
    if user.local:
        return
    st.caption(T.SIGNED_IN.format(name=user.name, role=user.role))
    if st.button(T.LOGOUT, key="logout"):
        if _oidc_configured():
            st.logout()
        st.session_state.pop(USER_KEY, None)
        st.rerun()


def _oidc_configured() -> bool:
    try:
        auth = st.secrets.get("auth")
    except FileNotFoundError:  # no secrets.toml at all
        return False
    return bool(auth and auth.get("redirect_uri") and auth.get("cookie_secret"))
