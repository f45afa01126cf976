"""Offline enrichment: questions, entities and relations by rules, on sentences of the kind the
real documents hold (the corpora themselves are in test_extract_corpus.py)."""

from __future__ import annotations

import json
import os
import re

import pytest

import zhixing.core.extract
from tests.command import ROOT, run_python
from zhixing.core.extract import normalize_entity_name, offline_knowledge
from zhixing.core.llm.schemas import ChunkKnowledge

SELF_REFERENCE = re.compile(
    r"this (document|cheat sheet|section|guide)|本文|本文档|本节|本章", re.I
)


def graph(text: str, **kwargs: object) -> ChunkKnowledge:
    return offline_knowledge(text, mode="graph", **kwargs)  # type: ignore[arg-type]


def relations(knowledge: ChunkKnowledge) -> set[tuple[str, str, str]]:
    return {(r.source, r.type, r.target) for r in knowledge.relations}


def entity_types(knowledge: ChunkKnowledge) -> dict[str, str]:
    return {e.name: e.type for e in knowledge.entities}


def test_the_public_api_is_what_the_build_pipeline_calls() -> None:
    assert set(zhixing.core.extract.__all__) == {
        "MODES",
        "normalize_entity_name",
        "offline_knowledge",
    }
    assert zhixing.core.extract.MODES == ("graph", "index")


@pytest.mark.parametrize(
    "variant",
    [
        "SQL Injection",
        "sql-injection",
        "SQL  injection",
        "sql_injection",
        " ＳＱＬ　Ｉｎｊｅｃｔｉｏｎ ",
    ],
)
def test_normalize_entity_name_merges_case_spacing_hyphen_and_full_width_variants(
    variant: str,
) -> None:
    assert normalize_entity_name(variant) == normalize_entity_name("SQL injection")


def test_normalize_entity_name_joins_spaced_chinese_and_never_translates() -> None:
    assert normalize_entity_name("SQL 注入") == normalize_entity_name("SQL注入") == "sql注入"
    assert normalize_entity_name("SQL注入") != normalize_entity_name("SQL injection")
    assert normalize_entity_name("executeQuery()") == normalize_entity_name("executeQuery")
    assert normalize_entity_name("“CWE-79”") == normalize_entity_name("cwe 79")
    assert normalize_entity_name("  ") == ""


def test_an_unknown_mode_is_rejected_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="graph, index"):
        offline_knowledge("text", mode="full")


def test_blank_text_gives_empty_knowledge() -> None:
    assert offline_knowledge("  \n\n ", mode="graph") == ChunkKnowledge()


def test_index_mode_gives_questions_but_no_entities_or_relations() -> None:
    text = "## 输入验证\n\n应用程序必须使用参数化查询来防止SQL注入。"
    index = offline_knowledge(text, title="安全编码规范", mode="index")
    assert index.questions and not index.entities and not index.relations
    assert index.questions == graph(text, title="安全编码规范").questions


def test_sql_injection_belonging_to_injection_attacks_is_an_is_a_relation() -> None:
    knowledge = graph("SQL注入属于注入攻击。")
    assert ("SQL注入", "is_a", "注入攻击") in relations(knowledge)
    assert entity_types(knowledge)["SQL注入"] == "vulnerability"
    assert entity_types(knowledge)["注入攻击"] == "vulnerability"


def test_parameterized_queries_prevent_sql_injection_and_are_a_control() -> None:
    knowledge = graph("Parameterized queries prevent SQL injection.")
    assert ("Parameterized queries", "prevents", "SQL injection") in relations(knowledge)
    assert entity_types(knowledge)["Parameterized queries"] == "control"
    assert entity_types(knowledge)["SQL injection"] == "vulnerability"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CSRF是跨站请求伪造的一种。", ("CSRF", "is_a", "跨站请求伪造")),
        ("跨站脚本攻击（XSS）是一种常见的漏洞。", ("XSS", "is_a", "漏洞")),
        ("使用SQL转义来防止SQL注入。", ("SQL转义", "prevents", "SQL注入")),
        ("缓冲区溢出导致远程代码执行。", ("缓冲区溢出", "causes", "远程代码执行")),
        (
            "SQL injection is a type of injection attack.",
            ("SQL injection", "is_a", "injection attack"),
        ),
        (
            "Input validation is part of defense in depth.",
            ("Input validation", "part_of", "defense"),
        ),
        ("The session token requires TLS 1.2 or later.", ("session token", "requires", "TLS 1.2")),
        ("XSS is prevented by output encoding.", ("output encoding", "prevents", "XSS")),
    ],
)
def test_relation_patterns_in_chinese_and_english(
    text: str, expected: tuple[str, str, str]
) -> None:
    knowledge = graph(text)
    assert expected in relations(knowledge)
    names = {e.name for e in knowledge.entities}
    assert {expected[0], expected[2]} <= names


def test_includes_takes_every_item_of_the_list() -> None:
    knowledge = graph("访问控制包括RBAC、ABAC和最小权限原则。")
    found = relations(knowledge)
    assert {("访问控制", "includes", t) for t in ("RBAC", "ABAC")} <= found


def test_a_negated_trigger_gives_no_typed_relation() -> None:
    for text in (
        "Client-side validation does not prevent SQL injection.",
        "客户端验证不能防止SQL注入。",
    ):
        assert not any(r.type == "prevents" for r in graph(text).relations), text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "密码必须使用 bcrypt 或 Argon2id 存储。",
            {("密码", "uses", "bcrypt"), ("密码", "uses", "Argon2id")},
        ),
        (
            "The payment service uses OAuth 2.0 for every request.",
            {("payment service", "uses", "OAuth 2.0")},
        ),
        # a purpose clause: what the clause before it acts on is what prevents
        (
            "用户登录成功后必须更换会话标识，防止会话固定攻击。",
            {("会话标识", "prevents", "会话固定攻击")},
        ),
    ],
)
def test_uses_and_a_purpose_clause_give_typed_relations_in_both_languages(
    text: str, expected: set[tuple[str, str, str]]
) -> None:
    assert expected <= relations(graph(text))


@pytest.mark.parametrize(
    "text",
    [
        "禁止对不可信数据使用 Java 原生反序列化。",  # the subject stands right before the trigger
        "Applications must not use MD5 for passwords.",
        "The team avoids the use of MD5 in new code.",
        "不要更换会话标识，防止会话固定攻击。",
    ],
)
def test_a_clause_that_forbids_or_denies_states_no_typed_relation(text: str) -> None:
    assert {r.type for r in graph(text).relations} <= {"related_to"}, text


def test_the_shipped_sample_gets_typed_relations_beside_co_occurrence() -> None:
    """Issue 17: offline, every edge of the sample's graph was `related_to`."""
    from zhixing.core.ingest import chunk_document, parse_file

    types: set[str] = set()
    for path in sorted((ROOT / "app" / "samples").glob("*.md")):
        doc = parse_file(path)
        for chunk in chunk_document(doc):
            knowledge = graph(chunk.text, title=doc.title, heading_path=chunk.heading_path)
            types |= {r.type for r in knowledge.relations}
    assert {"uses", "prevents", "is_a", "related_to"} <= types


def test_identifiers_get_their_type_from_their_form() -> None:
    text = (
        "CWE-79 and CVE-2021-44228 are tracked under GB/T 34944-2017 and ISO/IEC 27001:2013. "
        "V5.3.1 of OWASP ASVS asks for TLS 1.2; use a `PreparedStatement` and call executeQuery()."
    )
    types = entity_types(graph(text))
    assert types["CWE-79"] == "weakness"
    assert types["CVE-2021-44228"] == "vulnerability"
    assert types["GB/T 34944-2017"] == "standard"
    assert types["ISO/IEC 27001:2013"] == "standard"
    assert types["V5.3.1"] == "clause"
    assert types["TLS 1.2"] == "technology"
    assert types["PreparedStatement"] == "artifact"
    assert types["executeQuery()"] == "artifact"
    cwe = next(e for e in graph(text).entities if e.name == "CWE-79")
    assert cwe.attributes == {"cwe": "79"}


def test_an_identifier_next_to_chinese_is_still_found() -> None:
    types = entity_types(graph("参见CWE-89和GB/T 22239-2019，基于DOM的XSS也要防范。"))
    assert types["CWE-89"] == "weakness"
    assert types["GB/T 22239-2019"] == "standard"
    assert types["XSS"] == "vulnerability"


def test_an_abbreviation_in_brackets_is_noted_on_both_names() -> None:
    knowledge = graph("Cross-Site Request Forgery (CSRF) is an attack on authenticated sessions.")
    by_name = {e.name: e for e in knowledge.entities}
    assert by_name["Cross-Site Request Forgery"].attributes["abbreviation"] == "CSRF"
    assert by_name["CSRF"].attributes["full_name"] == "Cross-Site Request Forgery"


def test_entities_leave_out_generic_words_numbers_and_single_characters() -> None:
    text = (
        "系统和应用的数据必须加密存储。用户的数据在系统中传输时应当使用 TLS 1.2 以上版本，"
        "并且密钥必须定期轮换。The system should use the data of the application with care. "
        "In 2021, 90% of the applications used more than 3 services."
    )
    names = {normalize_entity_name(e.name) for e in graph(text).entities}
    assert not names & {
        "系统",
        "应用",
        "数据",
        "用户",
        "the",
        "use",
        "system",
        "data",
        "2021",
        "90",
    }
    assert all(len(n) > 1 and not n.isdigit() for n in names)
    assert "tls 1.2" in names and "密钥" in names


def test_a_chunk_holds_at_most_twenty_entities_plus_pattern_endpoints() -> None:
    terms = (
        "SQL注入、命令注入、LDAP注入、XPath注入、跨站脚本攻击、跨站请求伪造、服务器端请求伪造、"
        "缓冲区溢出、整数溢出、路径遍历、文件包含、会话固定、点击劫持、开放重定向、模板注入、"
        "HTTP参数污染攻击、拒绝服务攻击、暴力破解、撞库攻击、中间人攻击、DNS劫持、反序列化漏洞"
    )
    text = "\n\n".join(f"常见的漏洞有{terms}。" for _ in range(3))
    knowledge = graph(text)
    assert 20 <= len(knowledge.entities) <= 30
    assert len({e.name for e in knowledge.entities}) == len(knowledge.entities)


def test_relations_join_emitted_entities_only_without_self_loops_or_duplicates() -> None:
    text = (
        "## Defenses\n\n"
        "Prepared statements prevent SQL injection. SQL injection is a type of injection attack. "
        "Stored procedures and prepared statements are both used with SQL. "
        "Prepared statements prevent SQL injection, and stored procedures prevent SQL injection."
    )
    knowledge = graph(text, title="SQL Injection Prevention Cheat Sheet")
    names = {e.name for e in knowledge.entities}
    seen = set()
    for r in knowledge.relations:
        assert r.source in names and r.target in names
        assert normalize_entity_name(r.source) != normalize_entity_name(r.target)
        key = (normalize_entity_name(r.source), r.type, normalize_entity_name(r.target))
        assert key not in seen
        seen.add(key)
    pairs = {frozenset((r.source, r.target)) for r in knowledge.relations if r.type == "related_to"}
    typed = {frozenset((r.source, r.target)) for r in knowledge.relations if r.type != "related_to"}
    assert not pairs & typed  # a pair linked by a pattern gets no extra co-occurrence edge


def test_questions_name_the_document_instead_of_this_document() -> None:
    text = (
        "# Introduction\n\nThis cheat sheet helps developers. Developers must validate input "
        "on the server.\n\nThis document should be read in full."
    )
    knowledge = offline_knowledge(text, title="Input Validation Cheat Sheet")
    assert knowledge.questions
    for q in knowledge.questions:
        assert not SELF_REFERENCE.search(q.question), q.question
    assert any("Input Validation Cheat Sheet" in q.question for q in knowledge.questions)


def test_a_normative_sentence_question_points_at_the_lines_of_the_sentence() -> None:
    text = "\n".join(
        [
            "# 会话管理",
            "",
            "会话令牌是随机生成的字符串。",
            "",
            "会话令牌必须在用户注销后立即失效，",
            "并且禁止在URL中传递会话令牌。",
        ]
    )
    knowledge = offline_knowledge(text, title="Web应用安全规范")
    lines = text.splitlines()
    asked = [q for q in knowledge.questions if "会话令牌" in q.question and "要求" in q.question]
    assert asked, [q.question for q in knowledge.questions]
    q = asked[0]
    assert (q.line_start, q.line_end) == (5, 6)
    assert "必须" in "".join(lines[q.line_start - 1 : q.line_end])
    assert q.question.startswith("《Web应用安全规范》")


def test_english_text_gets_english_questions_and_chinese_text_chinese_ones() -> None:
    english = offline_knowledge(
        "## Session tokens\n\nSession tokens must be invalidated on logout.", title="Session Guide"
    )
    chinese = offline_knowledge("## 会话令牌\n\n会话令牌必须在注销后失效。", title="会话管理规范")
    assert english.questions and chinese.questions
    assert all(not re.search(r"[\u4e00-\u9fff]", q.question) for q in english.questions)
    assert all(re.search(r"[\u4e00-\u9fff]", q.question) for q in chinese.questions)


def test_a_requirement_table_row_gives_a_question_and_a_clause_entity_with_its_level() -> None:
    text = "\n".join(
        [
            "## V5.3 输出编码和预防注入",
            "",
            "| # | 描述 | L1 | L2 | L3 | CWE |",
            "| :---: | :--- | :---: | :---: | :---: | :---: |",
            "| **5.3.4** | 验证数据库查询是否使用参数化查询，以防止数据库注入攻击。 | ✓ | ✓ | ✓ | 89 |",
            "| **5.4.1** | 验证应用程序是否使用内存安全字符串，以防止缓冲区溢出。 | | ✓ | ✓ | 120 |",
        ]
    )
    knowledge = graph(text, title="OWASP ASVS 4.0.3")
    asked = {q.question: (q.line_start, q.line_end) for q in knowledge.questions}
    assert asked["OWASP ASVS V5.3.4 对参数化查询有什么要求？"] == (5, 5)
    # 5.4.1 is not under a "V5.4" heading here, so it is written as the row writes it
    assert asked["OWASP ASVS 5.4.1 对缓冲区溢出有什么要求？"] == (6, 6)
    entities = {e.name: e for e in knowledge.entities}
    assert entities["V5.3.4"].type == "clause"
    assert entities["V5.3.4"].attributes == {"level": "L1", "cwe": "89"}
    assert entities["5.4.1"].attributes["level"] == "L2"
    assert "验证数据库查询" in entities["V5.3.4"].description


def test_line_ranges_stay_inside_a_tiny_chunk() -> None:
    knowledge = offline_knowledge("## Password Storage", title="Password Storage Cheat Sheet")
    assert 1 <= len(knowledge.questions) <= 2
    assert all(q.line_start == q.line_end == 1 for q in knowledge.questions)


_PROBE = """
import json, sys, threading
from zhixing.core.extract import offline_knowledge
texts = json.loads(sys.stdin.read())
out = [None] * len(texts)
def work(i):
    out[i] = offline_knowledge(texts[i], title="规范", mode="graph").model_dump()
threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(out, ensure_ascii=False))
"""


@pytest.mark.process
def test_the_same_text_gives_the_same_knowledge_in_threads_and_across_processes() -> None:
    # Threads race for jieba's first load, and another hash seed reorders any set iteration.
    text = "## 输出编码\n\n输出编码必须与解释器相关，以防止SQL注入和跨站脚本攻击（XSS）。"
    texts = [text] * 6
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = run_python("-c", _PROBE, input=json.dumps(texts), env=env, timeout=120, check=True)
    results = json.loads(done.stdout)
    here = graph(text, title="规范").model_dump()
    assert all(r == here for r in results)
    assert graph(text, title="规范").model_dump() == here
    assert "Building prefix dict" not in done.stderr  # jieba's banner is quiet
