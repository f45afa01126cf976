"""Zhixing's Streamlit entry point: the shell (sidebar, navigation) around the six pages."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]  # the checkout, or the installed package's folder
try:
    import zhixing  # noqa: F401 - installed (the wheel, an editable install)
except ImportError:  # `streamlit run app/main.py` puts app/ on the path, not the checkout
    sys.path.insert(0, str(ROOT))

from zhixing.app.auth import require_login, sign_out  # noqa: E402
from zhixing.app.background import resume_interrupted_once  # noqa: E402
from zhixing.app.services import ACTOR_KEY, knowledge_service  # noqa: E402
from zhixing.app.strings import LANGUAGE_KEY, LANGUAGE_NAMES, initial_language  # noqa: E402
from zhixing.app.strings import shell as T  # noqa: E402
from zhixing.app.widgets import inert, sidebar  # noqa: E402
from zhixing.core.config import Settings  # noqa: E402
from zhixing.core.errors import ZhixingError, internal_error  # noqa: E402
from zhixing.core.service import debug_log  # noqa: E402

log = logging.getLogger("zhixing.app.main")

LANGUAGE_USER = "ui-language-user"  # session key: whose saved choice the language is, if anyone's

try:
    settings = Settings.from_env()
    # Tracebacks go there, one sentence to the page.
    debug_log(settings.home, level=settings.log_level, as_json=settings.log_format == "json")
    shared = knowledge_service()
except ZhixingError as exc:
    st.error(inert(T.SERVICE_ERROR.format(error=exc)))
    st.stop()
# Builds a crash interrupted go on as soon as the server is back (once per process).
resume_interrupted_once(shared)
# The login form speaks the deployment's or the browser's language; once someone signs in,
# their own saved choice takes over (again whenever another user signs in on this session).
if st.session_state.get(LANGUAGE_KEY) not in LANGUAGE_NAMES:
    st.session_state[LANGUAGE_KEY] = initial_language(
        shared.settings.language, None, st.context.locale
    )
    st.session_state.pop(LANGUAGE_USER, None)
st.set_page_config(page_title=T.APP_TITLE, page_icon="📚", layout="wide")
# Nobody reaches a page, nor the sidebar's list of knowledge bases, before signing in; without
# logins, nobody who came by a name other than localhost's (app/auth.py `local_request`).
st.session_state[ACTOR_KEY] = None
user = require_login(shared)
st.session_state[ACTOR_KEY] = user
if st.session_state.get(LANGUAGE_USER) != user.name:
    saved = shared.as_user(user).users.preference("language")
    st.session_state[LANGUAGE_KEY] = initial_language(
        shared.settings.language, saved, st.context.locale
    )
    st.session_state[LANGUAGE_USER] = user.name


def save_language() -> None:
    """The sidebar's language picker changed: keep the choice for this user's next sessions."""
    shared.as_user(user).users.set_preference("language", st.session_state[LANGUAGE_KEY])


PAGES = ROOT / "pages"
pages = [
    st.Page(PAGES / "build.py", title=T.NAV_BUILD, icon="🧱", default=True),
    st.Page(PAGES / "graph.py", title=T.NAV_GRAPH, icon="🕸️"),
    st.Page(PAGES / "recall.py", title=T.NAV_RECALL, icon="🔎"),
    st.Page(PAGES / "agent.py", title=T.NAV_AGENT, icon="🤖"),
    st.Page(PAGES / "account.py", title=T.NAV_ACCOUNT, icon="🔑"),  # everyone's own tokens
]
if user.can("admin"):  # the LLM endpoint, its key and the users are the admins' business
    pages.append(st.Page(PAGES / "settings.py", title=T.NAV_SETTINGS, icon="⚙️"))
navigation = st.navigation(pages)
try:
    sidebar(shared.as_user(user))
except ZhixingError as exc:
    st.error(inert(T.SERVICE_ERROR.format(error=exc)))
    st.stop()
with st.sidebar:
    st.selectbox(
        T.LANGUAGE,
        list(LANGUAGE_NAMES),
        format_func=LANGUAGE_NAMES.__getitem__,
        key=LANGUAGE_KEY,
        on_change=save_language,
    )
    sign_out(user)
try:
    navigation.run()
except Exception as exc:  # a bug: one sentence on the page, the traceback in the debug log
    log.error("page %s failed", navigation.title, exc_info=True)
    st.error(inert(T.PAGE_ERROR.format(error=internal_error(exc, f"showing {navigation.title}"))))
