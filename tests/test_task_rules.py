"""The task agent's rules: the line rules' known misses and false alarms (issue 18), topics
named by a clause's CWE ids, and the built-in rule pack's subtask for what no clause covers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService
from zhixing.core.task.audit_rules import topic_for, topic_named


def _fires(topic: str, line: str) -> bool:
    """Whether a line rule of the topic reports this line (its same-line exception included)."""
    for rule in topic_named(topic).rules:
        if re.search(rule.pattern, line) and not (
            rule.unless_line and re.search(rule.unless_line, line)
        ):
            return True
    return False


@pytest.mark.parametrize(
    ("line", "reported"),
    [
        ('private static final String HMAC_KEY = "PRODKEY2024";', True),  # a value, not a name
        ('static final String SECRET_KEY = "shop-2024-hmac";', True),
        ('private static final String REFRESH_KEY_ENV = "SHOP_REFRESH_KEY";', False),
        ('static final String API_KEY = "PAYMENT_API_KEY";', False),  # names a variable
    ],
)
def test_a_literal_key_is_reported_unless_it_names_a_setting(line: str, reported: bool) -> None:
    assert _fires("secrets", line) is reported


@pytest.mark.parametrize(
    ("line", "reported"),
    [
        ('log.info("password reset requested for {}", user);', False),  # the message's word
        ('log.warn("bad \\"password\\" given by {}", name);', False),
        ('logger.error("用户修改密码失败");', False),
        ('log.info("Login attempt: user=" + user + ", password=" + password);', True),
        ('log.debug("token {}", token);', True),
        ('log.debug("refresh {}", user.getPassword());', True),
        ('log.info("password={}", MaskUtil.mask(password));', False),  # masked
    ],
)
def test_a_log_line_is_reported_only_when_it_logs_a_secret_value(line: str, reported: bool) -> None:
    assert _fires("logging", line) is reported


def test_a_clause_that_cites_a_cwe_names_its_topic_when_its_heading_does_not() -> None:
    assert topic_for("4.2 Tokens", "Tokens must not come from java.util.Random (CWE-330).").key == (
        "random"
    )
    assert topic_for("4.3 会话", "不得把未校验的请求数据写入会话（CWE-501）。").key == "trust"
    assert topic_for("5 Scope", "This guide applies to all services.") is None
    assert topic_for("3.1 SQL 注入防护", "CWE-330").key == "sql"  # the heading decides first


GUIDE = """# Service rules

## 1 SQL injection

Queries must use bound parameters (CWE-89); never concatenate request data into SQL.
"""

SERVLET = """package org.acme.reports;

import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.Statement;

public class ReportServlet {
    private Connection db;

    public void doGet(javax.servlet.http.HttpServletRequest req) throws Exception {
        String region = req.getParameter("region");
        Statement st = db.createStatement();
        st.executeQuery("SELECT * FROM sales WHERE region = '" + region + "'");
        MessageDigest md = MessageDigest.getInstance("MD5");
        md.update(region.getBytes());
    }
}
"""


def test_what_no_clause_covers_is_reported_by_the_built_in_rule_pack_naming_its_rule(
    tmp_path: Path,
    embedder,  # noqa: ANN001
) -> None:
    guide, project = tmp_path / "rules.md", tmp_path / "project"
    guide.write_text(GUIDE, encoding="utf-8")
    (project / "src").mkdir(parents=True)
    (project / "src" / "ReportServlet.java").write_text(SERVLET, encoding="utf-8")
    events: list[dict] = []
    with KnowledgeService(Settings(home=tmp_path / "home"), embedder=embedder) as svc:
        svc.kbs.create("kb")
        svc.builds.add("kb", [guide])
        result = svc.tasks.run(
            "Audit this project against @kb", ["kb"], workspace=project, on_event=events.append
        )
    [analysis] = [e for e in events if e["node"] == "analysis"]
    assert analysis["files"] == 1 and analysis["findings"] >= 2
    by_cwe = {f.cwe: f for f in result.findings}
    sql, md5 = by_cwe[89], by_cwe[328]
    assert sql.line == 13 and sql.knowledge[0].section.startswith("1 SQL injection")
    assert sql.rule == "zhixing.sqli.tainted-query" and sql.trace  # source → sink
    assert md5.knowledge == () and md5.rule == "zhixing.hash.weak-digest"
    assert result.plan_after[-1].topic == "builtin"
    assert "Built-in rule pack" in result.plan_after[-1].title
    assert "`zhixing.hash.weak-digest` (built-in rule pack" in result.report
