"""The agent page (智能体), driven by AppTest on a real home built from the shipped samples:
it carries out tasks; questions go to the recall notebook."""

from __future__ import annotations

import shutil

import pytest

from tests.pages import open_page, say
from zhixing.app.strings import agent as T

TASK = "总结 @kb 中关于密码存储的要求"


@pytest.fixture
def home(sample_home, app_home):
    """A copy of the built sample home, for the app."""
    shutil.copytree(sample_home, app_home)
    return app_home


def test_the_page_is_for_tasks_and_points_questions_to_the_notebook(home):
    at = open_page("agent")
    assert not at.get("segmented_control")  # no ask/task switch: questions live in the notebook
    links = [e for e in at.get("page_link") if T.ASK_IN_NOTEBOOK in e.proto.label]
    assert links and links[0].proto.page.endswith("recall")


def test_an_unknown_mention_gives_a_warning_and_the_task_still_runs(home):
    at = open_page("agent")
    at.checkbox(key="agent-sample").uncheck()
    at = say(at, f"@nosuchkb {TASK}")
    mention = [w.value for w in at.warning if "@nosuchkb" in w.value]
    assert mention and "kb" in mention[0]
    assert [s.label for s in at.status][0].startswith("知识调研 ·")
    assert any("工作区" in w.value for w in at.warning)  # no workspace: nothing audited
    assert not at.error


@pytest.mark.slow
def test_a_reload_shows_the_conversation_so_far_and_new_conversation_hides_it(home):
    at = open_page("agent")
    at.checkbox(key="agent-sample").uncheck()
    say(at, TASK)
    at = open_page("agent")  # a fresh session on the same home: a reload
    questions = [m.markdown[0].value for m in at.chat_message if m.name == "user"]
    assert questions == ["总结 kb 中关于密码存储的要求"]  # a mention inside the sentence: a word
    at.button(key="agent-new").click().run()
    assert not at.chat_message
    assert not open_page("agent").chat_message  # the marker is stored, not kept in the session
