"""A knowledge base of two languages (issue 37): the other language's best chunks take places
in the fused list (core/search/languages.py), so an English question over English guides and
a Chinese standard keeps the standard's passage among its hits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import built_home
from zhixing.core.config import Settings
from zhixing.core.search.fusion import Fused
from zhixing.core.search.languages import OTHER_RANKS, give_places, in_chinese, without_names
from zhixing.core.service import KnowledgeService

QUESTION = "What does the SVS standard require for session tokens?"
TOPICS = [
    "Session cookies carry the Secure and HttpOnly attributes on every session token.",
    "A session token is renewed after login so an old session cannot be fixed.",
    "Idle sessions end after 15 minutes; session tokens then stop working.",
    "Logout invalidates the session token on the server, not only in the browser.",
    "Session tokens never travel in URLs, where logs and referrers would keep them.",
    "Session identifiers are long random values that nobody can guess.",
    "Every session records its user's last activity for the idle timeout.",
    "A session token bound to a device cannot be replayed from another one.",
    "Sessions of an administrator end sooner than sessions of ordinary users.",
    "Single sign-on sessions end together when the user signs out of one application.",
    "Session tokens in local storage are readable by any script on the page.",
    "The session store keeps tokens hashed, so a leaked database reveals none.",
]
ENGLISH = {f"guide-{i:02}.md": f"# Session guide {i}\n\n{text}\n" for i, text in enumerate(TOPICS)}
CHINESE = {
    "standard-v3.md": "# V3 会话管理\n\n## V3.2 会话绑定\n\n"
    "应用程序在用户登录时必须生成新的会话令牌，会话令牌至少具有 64 位的熵。\n"
    "会话令牌必须使用经批准的安全随机数生成器生成，并且不得出现在 URL 中。\n"
}


def test_an_acronym_leaves_the_other_languages_query_where_two_key_terms_stay() -> None:
    assert without_names(QUESTION) == "What does the standard require for session tokens?"
    assert without_names("What is XSS?") == "What is XSS?"  # nothing would be left to ask
    assert without_names("会话令牌有哪些要求？") == "会话令牌有哪些要求？"


def test_a_chunk_is_chinese_when_its_han_characters_outnumber_its_latin_words() -> None:
    assert in_chinese("会话令牌必须使用 SecureRandom 生成。")
    assert not in_chinese("Session tokens are generated with SecureRandom (安全随机数).")


def test_the_other_languages_chunks_take_their_places_after_the_first_five() -> None:
    fused = [Fused(i, score=1 / (60 + i)) for i in range(1, 13)]
    placed = give_places(fused, [100, 101], top_k=10)
    assert [f.item for f in placed[:5]] == [1, 2, 3, 4, 5]
    assert [placed[r - 1].item for r in OTHER_RANKS] == [100, 101]
    assert placed[OTHER_RANKS[0] - 1].ranks == {"other language": 1}
    # One among the first ten already stays where it is; a page of five has no place for them.
    assert give_places(fused, [3, 101], top_k=10)[2].item == 3
    assert [f.item for f in give_places(fused, [100], top_k=5)[:5]] == [1, 2, 3, 4, 5]
    # A short list (the fusion left out what only a list of no weight ranked): it comes last,
    # scored as the one before it.
    short = give_places(fused[:3], [100], top_k=10)
    assert [f.item for f in short] == [1, 2, 3, 100] and short[-1].score == fused[2].score


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[tuple]:
    mixed = built_home(tmp_path_factory.mktemp("mixed"), embedder, "kb", ENGLISH | CHINESE)
    english = built_home(tmp_path_factory.mktemp("english"), embedder, "kb", ENGLISH)
    yield mixed, english


def test_an_english_question_keeps_the_chinese_standards_passage_among_its_hits(
    homes, embedder
) -> None:
    mixed, _ = homes
    with KnowledgeService(Settings(home=mixed), embedder=embedder) as svc:
        hits = svc.search.query(QUESTION, ["kb"], top_k=10)
    documents = [h.document for h in hits]
    assert "standard-v3.md" in documents
    placed = next(h for h in hits if h.document == "standard-v3.md")
    # The fusion alone left it out: only the other language's search found it.
    assert placed.strategies == {"other language": 1}
    assert documents.index("standard-v3.md") == OTHER_RANKS[0] - 1


def test_a_knowledge_base_of_one_language_is_searched_as_before(homes, embedder) -> None:
    mixed, english = homes
    with KnowledgeService(Settings(home=english), embedder=embedder) as svc:
        hits = svc.search.query(QUESTION, ["kb"], top_k=10)
    assert not any("other language" in h.strategies for h in hits)
    with KnowledgeService(Settings(home=mixed), embedder=embedder) as svc:
        chinese = svc.search.query("会话令牌有哪些要求？", ["kb"], top_k=10)
    assert chinese[0].document == "standard-v3.md"  # its own language first, as fused
