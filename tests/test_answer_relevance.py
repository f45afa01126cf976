"""Offline answers by meaning as well as by words (issue 37): the built-in multilingual model
scores each candidate sentence against the question (core/answer_relevance.py), so a Chinese
sentence answers an English question, and of sentences sharing the question's words the one
about it is quoted. These run the real built-in model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zhixing.core.answer import grounded_answer
from zhixing.core.answer_relevance import MAX_SCORED, SCORED_CHARS, relevance
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
