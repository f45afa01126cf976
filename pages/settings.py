"""Settings: the LLM endpoint, models, structured-output method and embedding, with a
"test connection" button. API keys are masked and never echoed back."""

from __future__ import annotations

import os

import streamlit as st

from zhixing.app.services import reload_when_idle, session_service
from zhixing.app.strings import settings as T
from zhixing.app.users import users_section
from zhixing.app.widgets import show_error
from zhixing.core.config import STRUCTURED_OUTPUT, Settings, load_saved
from zhixing.core.errors import ZhixingError
from zhixing.core.service import Found

service = session_service()
service.authorize("admin")  # the page is listed for admins only; core refuses anyone else
home = service.settings.home
saved = load_saved(home)
# What is saved, under the environment: the settings the next service opens with. While a
# build runs, the running service may still hold older ones (the sidebar shows those).
current = Settings.from_env({**os.environ, "ZHIXING_HOME": str(home)})

st.title(T.TITLE)
st.caption(T.INTRO)
saved_now = st.session_state.pop("settings-saved", None)
if saved_now == "now":
    st.success(T.SAVED)
elif saved_now == "pending":
    st.info(T.SAVED_PENDING)


def _found(found: Found) -> str:
    """What the connection test found a model's endpoint can do, in the session's language."""
    caps = found.capabilities

    def mark(name: str) -> str:
        value, why = getattr(caps, name), caps.reason(name)
        shown = "✓" if value else ("✗" if value is False else "?")
        return f"{shown} ({T.WHY[why]})" if why else shown

    names = ("json_schema", "json_object", "tool_calls", "streaming")
    slots = T.SLOTS.format(n=caps.slots) if caps.slots else T.SLOTS_UNKNOWN
    method = (T.METHOD_AUTO if found.chosen else T.METHOD_SET).format(method=found.method)
    text = T.FOUND.format(
        model=found.model, slots=slots, method=method, **{n: mark(n) for n in names}
    )
    return str(text)


def _env_note(name: str) -> None:
    if os.environ.get(name):
        st.caption(T.FROM_ENV.format(name=name))


with st.form("settings"):
    st.subheader(T.LLM_HEADER)
    base_url = st.text_input(T.BASE_URL, value=current.openai_base_url, help=T.BASE_URL_HELP)
    _env_note("OPENAI_BASE_URL")
    api_key = st.text_input(T.API_KEY, value="", type="password", key="settings-api-key")
    st.caption(T.API_KEY_SET if current.openai_api_key else T.API_KEY_UNSET)
    clear_key = st.checkbox(T.CLEAR_KEY, value=False) if saved.get("OPENAI_API_KEY") else False
    _env_note("OPENAI_API_KEY")
    chat_model = st.text_input(T.CHAT_MODEL, value=current.chat_model)
    fast_model = st.text_input(
        T.FAST_MODEL, value=saved.get("ZHIXING_FAST_MODEL", ""), help=T.FAST_MODEL_HELP
    )
    structured = st.selectbox(
        T.STRUCTURED,
        STRUCTURED_OUTPUT,
        index=STRUCTURED_OUTPUT.index(current.structured_output),
        help=T.STRUCTURED_HELP,
    )
    concurrency = st.number_input(
        T.CONCURRENCY, min_value=1, max_value=64, value=current.llm_concurrency
    )
    st.subheader(T.EMBED_HEADER)
    embedding = st.text_input(T.EMBEDDING, value=current.embedding, help=T.EMBEDDING_HELP)
    st.caption(T.EMBEDDING_WARNING)
    left, right = st.columns(2)
    test = left.form_submit_button(T.TEST)
    save = right.form_submit_button(T.SAVE, type="primary")

key = "" if clear_key else (api_key or saved.get("OPENAI_API_KEY", ""))
values = {
    "OPENAI_BASE_URL": base_url,
    "OPENAI_API_KEY": key,
    "ZHIXING_CHAT_MODEL": chat_model,
    "ZHIXING_FAST_MODEL": fast_model,
    "ZHIXING_STRUCTURED_OUTPUT": structured,
    "ZHIXING_LLM_CONCURRENCY": str(concurrency),
    "ZHIXING_EMBEDDING": embedding,
}

if test:
    try:
        # What the form says, on top of the environment: test before saving.
        env = {**os.environ, **{k: v for k, v in values.items() if v}}
        if api_key == "" and os.environ.get("OPENAI_API_KEY"):
            env["OPENAI_API_KEY"] = os.environ["OPENAI_API_KEY"]
        candidate = Settings.from_env({**env, "ZHIXING_HOME": str(home)})
        if not candidate.llm_configured:
            st.info(T.TEST_OFFLINE)
        else:
            with st.spinner(T.TESTING):
                result = service.admin.check_endpoint(candidate)
            shown = [*result.lines, *(_found(found) for found in result.found)]
            (st.success if result.ok else st.error)("\n\n".join(shown))
    except ZhixingError as exc:
        show_error(exc)

if save:
    try:
        service.admin.save_settings(values)  # saved at once, whatever is running
        # The shared service holds the Milvus Lite file, so the new one opens only after the old
        # one closes; a running build keeps the old one and ends with the settings it began with.
        now = reload_when_idle(service)
        st.session_state["settings-saved"] = "now" if now else "pending"
        st.session_state.pop("settings-api-key", None)  # never shown again, not even masked
        st.rerun()
    except ZhixingError as exc:
        show_error(exc)

users_section(service)
