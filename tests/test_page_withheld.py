"""A notebook on the recall page after its owner lost a knowledge base (AppTest, logins on):
the cells that consulted it show a sentence saying they are withheld, and nothing of it."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import write_docs
from tests.pages import go, open_page, run, sign_in
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService

RULES = "# Password rules\n\nAt level 2 a password has at least 12 characters.\n"
AUDIT = "# Audit\n\nAudit records of the payment system are kept for seven years.\n"


def shown(at: AppTest) -> str:
    """Every text the page shows: markdown, captions, notices and expander labels."""
    kinds = ("markdown", "caption", "info", "warning", "error", "success", "code", "text")
    values = [str(e.value) for kind in kinds for e in at.get(kind)]
    return "\n".join([*values, *(e.label for e in at.expander)])


@pytest.fixture
def home(app_home, monkeypatch, embedder):  # noqa: ANN001
    """Logins on; alice (a viewer) may see "finance" for now, and "rules" always."""
    monkeypatch.setenv("ZHIXING_AUTH", "required")
    docs = write_docs(app_home.parent / "docs", {"levels.md": RULES, "audit.md": AUDIT})
    with KnowledgeService(Settings(home=app_home), embedder=embedder) as svc:
        svc.users.add("alice", "viewer", "alice-password")
        svc.users.add("bob", "viewer", "bob-password")
        svc.kbs.create("rules")
        svc.builds.add("rules", [docs / "levels.md"])
        svc.kbs.create("finance")
        svc.builds.add("finance", [docs / "audit.md"])
        svc.kbs.restrict("finance", ["alice"])
    return app_home


def test_a_cell_of_a_knowledge_base_its_owner_lost_shows_that_it_is_withheld_and_nothing_of_it(
    home,  # noqa: ANN001
):
    from zhixing.app.services import knowledge_service

    at = go(sign_in(open_page(), "alice", "alice-password"), "recall")
    at.text_input(key="recall-query").input("audit records payment")
    at.radio(key="recall-mode").set_value("answer")
    at.button(key="recall-run").click()
    before = shown(run(at))
    assert "seven years" in before and "audit.md" in before  # hers, for now

    knowledge_service().kbs.restrict("finance", ["bob"])  # an admin takes it from her

    again = go(sign_in(open_page(), "alice", "alice-password"), "recall")
    after = shown(again)
    assert "seven years" not in after and "audit.md" not in after and "finance" not in after
    assert "无权查看的知识库，结果已隐藏" in " ".join(i.value for i in again.info)
    assert "audit records payment" in after  # her question stays: it is hers
    assert not again.error
