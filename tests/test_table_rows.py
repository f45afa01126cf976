"""A table row quoted in an answer reads with its column headers (issue 37): "L1: 30天" says
what 30 days is, in the row's own chunk or in a later one the table ran on into."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import built_home
from zhixing.core.answer import grounded_answer
from zhixing.core.config import Settings
from zhixing.core.service import KnowledgeService
from zhixing.core.text.sentence_cuts import clip
from zhixing.core.text.sentences import sentences_of

HEADER = (
    "| # | 说明 | L1 | L2 | L3 | CWE | [NIST &sect;](https://pages.nist.gov/800-63-3/) |\n"
    "| :---: | :--- | :---: | :---: | :---: | :---: | :---: |\n"
)


def rows(text: str) -> list[str]:
    return [s.text for s in sentences_of(text) if s.kind == "row"]


def test_a_requirement_row_reads_as_its_number_and_statement_with_the_columns_named() -> None:
    table = HEADER + (
        "| **3.3.2** | 如果认证器允许用户保持登录状态，请验证定期进行重新认证。 | 30天 "
        "| 12小时 或 30分钟不活动 | 12小时 或 15 分钟不活动 | 613 | 7.2 |\n"
        "| **3.3.3** | 验证用户修改密码后可以终止其他所有活动会话。 | | ✓ | ✓ | 613 | |"
    )
    assert rows(table) == [
        "3.3.2 如果认证器允许用户保持登录状态，请验证定期进行重新认证。（L1: 30天 · "
        "L2: 12小时 或 30分钟不活动 · L3: 12小时 或 15 分钟不活动 · CWE: 613 · NIST §: 7.2）",
        "3.3.3 验证用户修改密码后可以终止其他所有活动会话。（L2: ✓ · L3: ✓ · CWE: 613）",
    ]


def test_an_english_row_puts_its_headers_in_plain_brackets() -> None:
    table = (
        "| # | Description | L1 | L2 | CWE |\n|---|---|---|---|---|\n"
        "| 3.2.2 | Verify that session tokens possess at least 64 bits of entropy. | ✓ | ✓ | 331 |"
    )
    assert rows(table) == [
        "3.2.2 Verify that session tokens possess at least 64 bits of entropy. "
        "(L1: ✓ · L2: ✓ · CWE: 331)"
    ]


def test_a_row_of_short_values_names_every_cell() -> None:
    table = "| 级别 | 空闲超时 | 绝对超时 |\n|---|---|---|\n| L2 | 30 分钟 | 12 小时 |"
    assert rows(table) == ["级别: L2 | 空闲超时: 30 分钟 | 绝对超时: 12 小时"]


def test_a_header_that_names_nothing_leaves_its_cell_bare_and_its_ticks_out() -> None:
    table = (
        "| | 要求 | 这一列的表头是一句说明，不是名字。 |\n|---|---|---|\n"
        "| A01 | 验证所有访问控制在服务器端执行。 | ✓ |"
    )
    assert rows(table) == ["A01 验证所有访问控制在服务器端执行。"]


def test_a_clipped_row_closes_the_bracket_of_its_headers() -> None:
    row = "3.2.2 " + "验证会话令牌具有足够的熵，" * 4 + "（L1: ✓ · L2: ✓ · L3: ✓ · CWE: 331）"
    shown = clip(row, 80)
    assert "L2: ✓" in shown and "CWE" not in shown  # cut inside the brackets
    assert shown.endswith("…）") and shown.count("（") == shown.count("）")


# --- a row in a later chunk than its table's header, through a real knowledge base -----------

# A requirement table too long for one chunk (800 units): the row asked about is its last.
FILLER_ROWS = "".join(
    f"| **9.{n}.1** | 验证第 {n} 类接口的请求在服务器端按统一的访问控制策略逐项检查权限，"
    f"记录拒绝访问的事件，并定期复核第 {n} 类接口的授权配置是否仍然符合最小权限原则。 "
    f"| ✓ | ✓ | ✓ | 285 | |\n"
    for n in range(1, 15)
)
TIMEOUT_ROW = (
    "| **9.15.1** | 验证闲置的登录会话在超时后失效，用户须重新认证。 | 30天 | 12小时 "
    "| 15分钟 | 613 | 7.2 |\n"
)
REQUIREMENTS = "# V9 会话与访问控制\n\n## V9.1 要求\n\n" + HEADER + FILLER_ROWS + TIMEOUT_ROW
QUESTION = "闲置的登录会话超时后应该怎样？"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[KnowledgeService]:
    where = tmp_path_factory.mktemp("table-rows")
    home = built_home(where, embedder, "kb", {"requirements.md": REQUIREMENTS})
    with KnowledgeService(Settings(home=home), embedder=embedder) as svc:
        yield svc


def test_a_row_in_a_later_chunk_than_its_header_is_cited_with_that_header(service) -> None:
    hits = service.search.query(QUESTION, ["kb"], top_k=5)
    chunk = next(h for h in hits if "9.15.1" in h.text)
    assert "9.1.1" not in chunk.text  # the table ran on into this chunk
    answer = grounded_answer(QUESTION, hits)
    line = next(x for x in answer.answer.splitlines() if "9.15.1" in x)
    assert line.startswith("- 9.15.1 验证闲置的登录会话在超时后失效，用户须重新认证。（L1: 30天 ·")
    assert "L3: 15分钟 · CWE: 613 · NIST §: 7.2）[" in line
    assert "|" not in line
