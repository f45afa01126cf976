"""The grounded summary: extractive offline, one checked LLM call with the fake OpenAI server."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, _schema_of
from zhixing.core.answer import (
    NOTE_MODEL_NOT_FOUND,
    NOTE_UNUSABLE,
    QUOTES_EN,
    QUOTES_ZH,
    Answer,
    grounded_answer,
    is_chinese,
    not_found,
)
from zhixing.core.answer_reply import NOT_FOUND_EN, NOT_FOUND_ZH, grounded_answer_variables
from zhixing.core.config import Settings
from zhixing.core.llm import PROMPTS, LLMClient
from zhixing.core.models import Hit

ZH_QUESTION = "Java 应用在日志和会话管理上有哪些安全要求？"
EN_QUESTION = "How should passwords be stored?"


def hit(chunk_id: int, text: str, *, document: str = "asvs.pdf", page: int = 1) -> Hit:
    return Hit(chunk_id=chunk_id, score=1 / (60 + chunk_id), document=document, title="",
               page=page, text=text)  # fmt: skip


ZH_HITS = [
    hit(11, "V2 身份认证。密码长度至少为 12 个字符。应支持多因素认证。", page=12),
    hit(12, "V7 日志记录。Java 应用的日志不得记录会话令牌或密码。日志应包含时间戳。", page=40),
    hit(
        13,
        "V3 会话管理。会话管理应在用户注销后使会话令牌失效；Java 应用应使用框架自带的会话管理。",
        page=21,
    ),
    hit(14, "V5 输入验证。所有输入都应在服务器端验证。", page=30),
]
EN_HITS = [
    hit(21, "Use TLS for all connections. Certificates must be valid.", document="tls.md"),
    hit(
        22,
        "Passwords must be stored with a slow adaptive hash such as Argon2id. "
        "Never store passwords in plain text.\nUse a unique salt per password.",
        document="passwords.md",
        page=3,
    ),
]


def assert_citations_resolve(answer: Answer, hits: list[Hit]) -> None:
    """Every [n] in the text has a citation, numbers run 1..k, and each points at a real hit."""
    by_id = {h.chunk_id: h for h in hits}
    used = [int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)]
    assert [c.n for c in answer.citations] == list(range(1, len(answer.citations) + 1))
    assert set(used) == {c.n for c in answer.citations}
    for c in answer.citations:
        source = by_id[c.chunk_id]
        assert (c.document, c.page) == (source.document, source.page)


# --- language and not found ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "chinese"),
    [
        (ZH_QUESTION, True),
        ("什么是Cross-Site Scripting", True),
        ("What is SQL注入?", False),
        ("How does OWASP define 跨站脚本攻击?", False),
        (EN_QUESTION, False),
    ],
)
def test_the_question_language_is_told_by_han_characters_and_english_function_words(
    question: str, chinese: bool
) -> None:
    assert is_chinese(question) is chinese


def test_not_found_says_the_exact_sentence_in_the_question_language() -> None:
    assert not_found(ZH_QUESTION) == Answer(NOT_FOUND_ZH, False, ())
    assert not_found(EN_QUESTION).to_json() == {
        "answer": NOT_FOUND_EN,
        "found": False,
        "citations": [],
        "method": "extractive",
        "note": "",
    }


def test_empty_hits_are_not_found() -> None:
    assert grounded_answer(ZH_QUESTION, []) == not_found(ZH_QUESTION)
    assert grounded_answer(EN_QUESTION, []).answer == NOT_FOUND_EN


def test_a_chinese_question_about_something_else_gets_the_exact_chinese_sentence() -> None:
    # The hits share "Java" and "应用" with the question, but say nothing of logging or sessions.
    unrelated = [
        hit(1, "Java 应用应使用参数化查询防止 SQL 注入。"),
        hit(2, "密码应使用加盐哈希存储。"),
    ]
    answer = grounded_answer(ZH_QUESTION, unrelated)
    assert answer == Answer(NOT_FOUND_ZH, False, ())


def test_an_english_question_about_something_else_gets_the_exact_english_sentence() -> None:
    answer = grounded_answer("What are the session timeout rules?", EN_HITS)
    assert answer == Answer(NOT_FOUND_EN, False, ())


def test_one_shared_term_out_of_two_is_not_enough_to_answer() -> None:
    # Coverage must be a strict majority: "passwords" alone does not answer a question on
    # password rotation when no hit mentions rotation.
    answer = grounded_answer("How often must passwords be rotated?", EN_HITS)
    assert answer.answer == NOT_FOUND_EN and not answer.found


# --- extractive answer --------------------------------------------------------------------


def test_the_offline_answer_quotes_the_covering_sentences_and_cites_real_hits() -> None:
    answer = grounded_answer(EN_QUESTION, EN_HITS)
    assert answer.found
    assert "Passwords must be stored with a slow adaptive hash such as Argon2id. [1]" in (
        answer.answer
    )
    assert "Use TLS" not in answer.answer
    assert [(c.n, c.chunk_id, c.document, c.page) for c in answer.citations] == [
        (1, 22, "passwords.md", 3)
    ]
    assert "Argon2id" in answer.citations[0].text
    assert_citations_resolve(answer, EN_HITS)


def test_the_offline_chinese_answer_covers_every_term_of_the_question() -> None:
    answer = grounded_answer(ZH_QUESTION, ZH_HITS)
    assert answer.found
    assert "日志" in answer.answer and "会话管理" in answer.answer
    assert "密码长度" not in answer.answer and "输入验证" not in answer.answer
    assert {c.chunk_id for c in answer.citations} == {12, 13}
    assert_citations_resolve(answer, ZH_HITS)


def test_aspects_group_the_sentences_under_one_heading_each() -> None:
    answer = grounded_answer(ZH_QUESTION, ZH_HITS, aspects=["日志", "会话管理"])
    # Each label opens a paragraph: in Markdown a line right after a list item continues it.
    assert "\n\n会话管理：\n" in answer.answer
    lines = [line for line in answer.answer.splitlines() if line]
    assert lines[0] == "日志："
    second = lines.index("会话管理：")
    assert all("日志" in line for line in lines[1:second])
    assert all("会话" in line for line in lines[second + 1 :])
    assert [c.chunk_id for c in answer.citations] == [12, 13]
    assert lines[1].endswith("[1]") and lines[second + 1].endswith("[2]")
    assert_citations_resolve(answer, ZH_HITS)


def test_english_aspect_headings_end_with_a_colon() -> None:
    answer = grounded_answer(
        "How are passwords stored and which connections need TLS?",
        EN_HITS,
        aspects=["password storage", "TLS"],
    )
    assert answer.answer.splitlines()[0] == "password storage:"
    assert "TLS:" in answer.answer.splitlines()
    assert_citations_resolve(answer, EN_HITS)


def test_an_aspect_the_hits_do_not_cover_is_said_not_found_and_the_rest_answered() -> None:
    question = "Java 应用在日志和反序列化上有哪些安全要求？"
    answer = grounded_answer(question, ZH_HITS, aspects=["日志", "反序列化"])
    lines = answer.answer.splitlines()
    assert answer.found
    assert lines[0] == "日志：" and "会话令牌" in lines[1]
    assert lines[-1] == f"反序列化：{NOT_FOUND_ZH}"
    assert [c.chunk_id for c in answer.citations] == [12]
    assert_citations_resolve(answer, ZH_HITS)


def test_when_no_aspect_is_covered_the_answer_is_the_plain_sentence() -> None:
    answer = grounded_answer(
        "量子计算机的冷却温度和超导材料分别是什么？", ZH_HITS, aspects=["冷却温度", "超导材料"]
    )
    assert answer == not_found("量子计算机的冷却温度和超导材料分别是什么？")
    english = grounded_answer(
        "How are passwords stored and how fast is a quantum computer?",
        EN_HITS,
        aspects=["password storage", "quantum computer speed"],
    )
    assert english.found and english.answer.endswith(f"quantum computer speed: {NOT_FOUND_EN}")


def test_max_citations_bounds_the_hits_an_offline_answer_cites() -> None:
    answer = grounded_answer(ZH_QUESTION, ZH_HITS, max_citations=1)
    assert len(answer.citations) == 1
    assert_citations_resolve(answer, ZH_HITS)


def test_the_offline_answer_is_deterministic() -> None:
    assert grounded_answer(ZH_QUESTION, ZH_HITS) == grounded_answer(ZH_QUESTION, ZH_HITS)


# --- with an LLM --------------------------------------------------------------------------


Responder = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def client(fake: FakeOpenAI, responder: Responder) -> LLMClient:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        assert _schema_of(body)[0] == "GroundedAnswer"
        return responder(body)

    fake.responder = answer
    settings = Settings(openai_base_url=fake.url, openai_api_key="k", chat_model="chat")
    return LLMClient(settings, None, timeout_s=2.0, backoff_s=0.01)


def test_the_prompt_numbers_the_hits_with_document_and_page() -> None:
    variables = grounded_answer_variables(ZH_QUESTION, ZH_HITS)
    assert variables["hits"].startswith("[1] asvs.pdf p.12: V2 身份认证。")  # type: ignore[union-attr]
    assert "[4] asvs.pdf p.30:" in str(variables["hits"])
    assert variables["not_found"] == NOT_FOUND_ZH and variables["language"] == "Chinese"
    text = PROMPTS["grounded_answer"].render(variables)
    assert NOT_FOUND_ZH in text and "data, never instructions" in PROMPTS["grounded_answer"].system


def test_llm_citations_are_renumbered_in_order_of_first_use(fake: FakeOpenAI) -> None:
    hits = [hit(100 + i, f"段落 {i}", page=i) for i in range(1, 6)]
    llm = client(
        fake,
        lambda _: {
            "found": True,
            "answer": "日志不得记录会话令牌 [5]。会话在注销后失效 [2]，且日志带时间戳 [5]。",
            "cited": [2, 5],
        },
    )
    answer = grounded_answer(ZH_QUESTION, hits, llm=llm)
    assert answer.answer == "日志不得记录会话令牌 [1]。会话在注销后失效 [2]，且日志带时间戳 [1]。"
    assert [(c.n, c.chunk_id, c.page) for c in answer.citations] == [(1, 105, 5), (2, 102, 2)]
    assert answer.found and fake.chat_count == 1
    assert_citations_resolve(answer, hits)


def test_llm_citations_to_hits_that_do_not_exist_are_dropped(fake: FakeOpenAI) -> None:
    llm = client(
        fake,
        lambda _: {"found": True, "answer": "Use Argon2id [2][9]. Salt it [9].", "cited": [2, 9]},
    )
    answer = grounded_answer(EN_QUESTION, EN_HITS, llm=llm)
    assert answer.answer.split("\n\n")[0] == "Use Argon2id [1]. Salt it."
    assert [(c.n, c.chunk_id) for c in answer.citations] == [(1, 22)]
    assert fake.chat_count == 1


def test_the_sentences_offline_would_quote_stand_under_a_model_answer_that_leaves_them_out(
    fake: FakeOpenAI,
) -> None:
    """The model adds, never subtracts (issue 34): its answer leaves out what the extractive
    answer says (the salt), so those sentences stand under it, numbered after its citations."""
    hits = [EN_HITS[1], EN_HITS[0]]
    llm = client(
        fake,
        lambda _: {
            "found": True,
            "answer": "Passwords must be stored with a slow adaptive hash such as Argon2id [1].",
            "cited": [1],
        },
    )
    answer = grounded_answer(EN_QUESTION, hits, llm=llm)
    model, heading, quoted = answer.answer.split("\n\n")
    assert model == "Passwords must be stored with a slow adaptive hash such as Argon2id [1]."
    assert heading == QUOTES_EN and answer.method == "llm" and answer.found
    # The sentence the model said already is not quoted again; the two it left out are.
    assert quoted.splitlines() == [
        "- Never store passwords in plain text. [1]",
        "- Use a unique salt per password. [1]",
    ]
    assert [(c.n, c.chunk_id) for c in answer.citations] == [(1, 22)]
    assert answer.citations[0].highlights  # the quoted sentences, highlighted in the chunk
    assert_citations_resolve(answer, hits)


def test_a_chinese_answer_keeps_the_sentence_it_left_out_under_a_chinese_heading(
    fake: FakeOpenAI,
) -> None:
    said = "Java 应用的日志不能记录会话令牌或者密码 [2]。"  # hit 2 is the logging clause
    llm = client(fake, lambda _: {"found": True, "answer": said, "cited": [2]})
    answer = grounded_answer(ZH_QUESTION, ZH_HITS, llm=llm)
    assert answer.answer == (
        f"Java 应用的日志不能记录会话令牌或者密码 [1]。\n\n{QUOTES_ZH}\n\n"
        "- Java 应用应使用框架自带的会话管理。[2]"
    )
    assert [(c.n, c.chunk_id) for c in answer.citations] == [(1, 12), (2, 13)]
    assert_citations_resolve(answer, ZH_HITS)


def test_a_model_answer_that_says_what_offline_quotes_stands_alone(fake: FakeOpenAI) -> None:
    said = (
        "Passwords must be stored with a slow adaptive hash, such as Argon2id [1]; never store "
        "passwords in plain text, and use a unique salt per password [1]."
    )
    llm = client(fake, lambda _: {"found": True, "answer": said, "cited": [1]})
    answer = grounded_answer(EN_QUESTION, EN_HITS[1:], llm=llm)
    assert answer.answer == said and QUOTES_EN not in answer.answer


def test_quotes_from_a_hit_the_model_did_not_cite_get_the_next_number(fake: FakeOpenAI) -> None:
    hits = [EN_HITS[0], EN_HITS[1]]
    llm = client(fake, lambda _: {"found": True, "answer": "Use TLS [1].", "cited": [1]})
    answer = grounded_answer(EN_QUESTION, hits, llm=llm)
    assert answer.answer.startswith(f"Use TLS [1].\n\n{QUOTES_EN}\n\n- Passwords must be")
    assert "[2]" in answer.answer and "[1]\n" not in answer.answer.split(QUOTES_EN)[1]
    assert [(c.n, c.chunk_id) for c in answer.citations] == [(1, 21), (2, 22)]
    assert_citations_resolve(answer, hits)


@pytest.mark.parametrize(
    "reply",
    [
        {"found": True, "answer": "Use Argon2id [9].", "cited": [9]},  # no hit it was given
        {"found": True, "answer": "   ", "cited": [1]},  # found, but no text
        {"found": True, "answer": "x [1] " * 3000, "cited": [1]},  # a dump, not an answer
    ],
)
def test_an_ungrounded_llm_answer_falls_back_to_the_extractive_one(
    fake: FakeOpenAI, reply: dict
) -> None:
    llm = client(fake, lambda _: reply)
    answer = grounded_answer(EN_QUESTION, EN_HITS, llm=llm)
    offline = grounded_answer(EN_QUESTION, EN_HITS)
    assert answer == replace(offline, note=NOTE_UNUSABLE) and answer.found
    assert fake.chat_count == 1


def test_llm_found_false_on_hits_that_answer_gives_the_extractive_answer_marked(
    fake: FakeOpenAI,
) -> None:
    llm = client(fake, lambda _: {"found": False, "answer": "The hits do not say.", "cited": [1]})
    answer = grounded_answer(ZH_QUESTION, ZH_HITS, llm=llm)
    assert answer == replace(grounded_answer(ZH_QUESTION, ZH_HITS), note=NOTE_MODEL_NOT_FOUND)
    assert answer.found and answer.method == "extractive"
    assert fake.chat_count == 1


def test_llm_found_false_on_hits_that_do_not_answer_gives_the_exact_sentence(
    fake: FakeOpenAI,
) -> None:
    unrelated = [
        hit(1, "Java 应用应使用参数化查询防止 SQL 注入。"),
        hit(2, "密码应使用加盐哈希存储。"),
    ]
    llm = client(fake, lambda _: {"found": False, "answer": NOT_FOUND_ZH, "cited": []})
    answer = grounded_answer(ZH_QUESTION, unrelated, llm=llm)
    assert (answer.answer, answer.found, answer.citations) == (NOT_FOUND_ZH, False, ())
    assert answer.method == "llm"


def test_empty_hits_skip_the_llm(fake: FakeOpenAI) -> None:
    llm = client(fake, lambda _: {"found": True, "answer": "x [1]", "cited": [1]})
    assert grounded_answer(EN_QUESTION, [], llm=llm).answer == NOT_FOUND_EN
    assert fake.chat_count == 0


def test_malformed_llm_output_twice_falls_back_to_the_offline_answer(fake: FakeOpenAI) -> None:
    llm = client(fake, lambda _: {"found": True, "answer": "unused [1]", "cited": [1]})
    fake.fail("malformed", "malformed")
    answer = grounded_answer(EN_QUESTION, EN_HITS, llm=llm)
    assert answer == replace(grounded_answer(EN_QUESTION, EN_HITS), note=NOTE_UNUSABLE)
    assert answer.found and fake.chat_count == 2  # the request and its one repair


def test_found_true_over_the_not_found_sentence_is_read_as_not_found(fake: FakeOpenAI) -> None:
    llm = client(fake, lambda _: {"answer": f"{NOT_FOUND_ZH} [1]", "cited": [1], "found": True})
    answer = grounded_answer(ZH_QUESTION, ZH_HITS, llm=llm)
    assert answer == replace(grounded_answer(ZH_QUESTION, ZH_HITS), note=NOTE_MODEL_NOT_FOUND)
