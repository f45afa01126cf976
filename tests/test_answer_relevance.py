"""Offline answers by meaning as well as by words (issue 37): the built-in multilingual model
scores each candidate sentence against the question (core/answer_relevance.py), so a Chinese
sentence answers an English question, and of sentences sharing the question's words the one
about it is quoted. These run the real built-in model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zhixing.core.answer import grounded_answer
from zhixing.core.answer_relevance import (
    MAX_SCORED,
    SCORED_CHARS,
    bridges,
    builtin_relevance,
    relevance,
)
from zhixing.core.answer_reply import NOT_FOUND_EN
from zhixing.core.models import Hit


def hit(chunk_id: int, text: str) -> Hit:
    return Hit(chunk_id=chunk_id, score=1 / (60 + chunk_id), document=f"d{chunk_id}.md",
               title="", page=1, text=text)  # fmt: skip


def no_meaning(queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
    """Key terms alone: every sentence equally far from the question."""
    return np.zeros((len(queries), len(sentences)), dtype=np.float32)


PEPPERS = hit(
    1,
    "A pepper is shared between stored passwords, rather than being unique to each password. "
    "The pepper should be stored separately from the password database. "
    "Peppers for stored passwords are kept in a vault or an HSM.",
)
STORAGE = hit(
    2,
    "Passwords should never be stored in plain text. Instead, they must be protected using "
    "strong, slow hashing algorithms such as Argon2id, bcrypt, or PBKDF2.",
)


def test_a_chinese_sentence_answers_an_english_question_it_shares_no_word_with() -> None:
    hits = [hit(1, "验证会话令牌是使用经批准的密码算法生成的。日志文件必须保存至少六个月。")]
    question = "Verify that session tokens are generated using approved cryptographic algorithms."
    assert not grounded_answer(question, hits, scorer=no_meaning).found  # words alone: nothing
    answer = grounded_answer(question, hits)
    assert answer.found
    assert "验证会话令牌是使用经批准的密码算法生成的。" in answer.answer
    assert "日志文件" not in answer.answer  # the line beside it is about something else


def test_an_english_question_over_chinese_text_on_other_things_is_not_found() -> None:
    hits = [hit(1, "日志文件必须保存至少六个月。所有输入都应在服务器端验证。")]
    answer = grounded_answer("How should passwords be stored?", hits)
    assert not answer.found and answer.answer == NOT_FOUND_EN


def test_the_sentence_closest_to_the_question_is_quoted_beside_those_sharing_its_words() -> None:
    question = "How should passwords be stored?"
    by_words = grounded_answer(question, [PEPPERS, STORAGE], scorer=no_meaning)
    assert "Argon2id" not in by_words.answer  # three sentences on peppers hold both words
    answer = grounded_answer(question, [PEPPERS, STORAGE])
    line = next(x for x in answer.answer.splitlines() if "plain text" in x)
    # The sentence that goes on from it ("Instead, they …") is quoted with it, in one line.
    assert "Instead, they must be protected" in line and "Argon2id" in line
    assert line.endswith("[2]")


def test_a_list_of_further_reading_is_never_quoted() -> None:
    text = (
        "## References\n\n"
        "- OWASP article on [SQL Injection](https://example.org/sqli) vulnerabilities\n"
        "- [Query Parameterization](https://example.org/params) for SQL injection\n"
    )
    content = "To prevent SQL injection, every query binds its input as parameters."
    answer = grounded_answer("How do I prevent SQL injection?", [hit(1, text), hit(2, content)])
    assert answer.found
    assert "example.org" not in answer.answer and "OWASP article" not in answer.answer
    assert content in answer.answer


def test_a_model_that_fails_leaves_the_answer_the_key_terms_give() -> None:
    def broken(queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        raise RuntimeError("the model could not load")

    by_words = grounded_answer("How should passwords be stored?", [PEPPERS], scorer=no_meaning)
    failed = grounded_answer("How should passwords be stored?", [PEPPERS], scorer=broken)
    assert failed.found and failed.answer == by_words.answer


def test_only_the_first_sentences_are_scored_each_read_to_its_head() -> None:
    seen: list[str] = []

    def recording(queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        seen.extend(sentences)
        return np.ones((len(queries), len(sentences)), dtype=np.float32)

    sentences = [f"Sentence {i} " + "x" * 400 for i in range(MAX_SCORED + 10)]
    scores = relevance(recording, ["q"], sentences)
    assert len(seen) == MAX_SCORED and all(len(s) == SCORED_CHARS for s in seen)
    assert scores.shape == (1, MAX_SCORED + 10)
    assert scores[0, :MAX_SCORED].min() == 1 and scores[0, MAX_SCORED:].max() == 0


# --- key terms across languages (core/answer_relevance.py `bridges`) -------------------------

ASVS_V3 = hit(
    3,
    "## V3.2 会话绑定\n\n"
    "| # | 说明 | L1 | L2 | L3 |\n| --- | --- | --- | --- | --- |\n"
    "| **3.2.1** | 验证应用程序在用户身份验证时，生成新的会话令牌。 | ✓ | ✓ | ✓ |\n"
    "| **3.2.2** | 验证会话令牌具有至少 64 位的熵。 | ✓ | ✓ | ✓ |\n",
)
SESSIONS_EN = hit(
    1,
    "Invalidate sessions after re-authentication and rotate tokens. "
    "The session ID is a name=value pair.",
)


def test_a_standard_in_the_other_language_is_quoted_beside_the_english_lines() -> None:
    question = "What does ASVS require for session tokens?"
    by_words = grounded_answer(question, [SESSIONS_EN, ASVS_V3], scorer=no_meaning)
    assert "3.2.1" not in by_words.answer  # the English line holds the terms word for word
    answer = grounded_answer(question, [SESSIONS_EN, ASVS_V3])
    assert "rotate tokens" in answer.answer
    line = next(x for x in answer.answer.splitlines() if "3.2.1" in x)
    assert "生成新的会话令牌" in line and line.endswith("[2]")  # cited, with its own number
    assert answer.citations[1].document == "d3.md"


def test_a_word_bridges_only_to_the_term_it_translates() -> None:
    score = builtin_relevance()
    # "login" is close to 日志 as well, but "log" is closer: only the translation bridges.
    assert bridges(score, {"日志": "日志"}, ["login", "log"]) == {"log": "日志"}
    # 输入验证 (input validation) is 0.69 from "authentication"; 身份验证 on the question's
    # side is nearer to it, so it does not stand for the term.
    assert bridges(score, {"输入验证": "输入验证"}, ["authentication"], own=["身份验证"]) == {}
    assert bridges(score, {"session": "session", "token": "tokens"}, ["会话", "令牌", "熵"]) == {
        "会话": "session",
        "令牌": "token",
    }


def test_one_translated_word_is_too_little_to_quote_a_sentence_for() -> None:
    keys = hit(1, "Encryption keys live in a key management service, never in source code.")
    logs = hit(2, "日志至少保存 180 天。")
    answer = grounded_answer("Where should encryption keys be kept?", [keys, logs])
    assert answer.found and "key management service" in answer.answer
    assert "日志" not in answer.answer  # 保存 stands for "kept", and for nothing else asked


def test_term_bridges_fail_quietly() -> None:
    def broken(queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        raise RuntimeError("the model did not load")

    assert bridges(broken, {"session": "session"}, ["会话"]) == {}
    # And the answer still stands on the key terms as written.
    answer = grounded_answer("What does ASVS require for session tokens?", [SESSIONS_EN, ASVS_V3],
                             scorer=broken)  # fmt: skip
    assert answer.found and "rotate tokens" in answer.answer and "3.2.1" not in answer.answer


def test_a_question_of_one_term_is_not_answered_by_its_translation_alone() -> None:
    # jieba cuts the name 杨群 into single characters, which are no terms: the question's one
    # term is 职业, and an English sentence on somebody else's profession must not answer it.
    hits = [hit(1, "Bari Lurie is an American executive. Her profession is fundraising.")]
    assert not grounded_answer("杨群的职业是什么？", hits).found
