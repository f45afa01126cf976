"""The recall page (召回): search, grounded summary and agentic recall; the rounds it shows."""

TITLE = "召回 Recall"
CAPTION = "在知识库中检索：多种策略并行（离线默认向量 + 关键词，配置 LLM 后六种），按查询加权 RRF 融合；可生成带引用的 AI 摘要，或多轮 Agentic 召回。"

QUERY_LABEL = "问题或关键词 Query"
QUERY_PLACEHOLDER = "例如：如何防止会话固定攻击？"
SCOPE_LABEL = "范围 Scope"
SCOPE_ALL = "@all"
SCOPE_ALL_LABEL = "@all 全部知识库"
STRATEGIES_LABEL = "检索策略 Strategies"
TOP_K_LABEL = "返回条数 Top-K"
MAX_ROUNDS_LABEL = "最多轮数 Max rounds (Agentic)"
AI_BUTTON = "AI 召回"
AGENTIC_BUTTON = "Agentic 召回"

EMPTY_QUERY = "请输入问题或关键词后再检索。 Please type a question first."
NO_STRATEGY = "请至少选择一种检索策略。 Please pick at least one strategy."
SEARCHING = "正在检索… Searching…"
ANSWER_HEADER = "回答 Answer"
HITS_HEADER = "召回结果 Hits · {count} 条"
EVIDENCE_HEADER = "证据 Evidence · {count} 条"
NO_HITS = "没有召回任何片段。 No chunk matched."
ROUNDS_HEADER = "检索轮次 Rounds"

# Hits and answers (shared with the agent page through app/rounds.py)
HIT_LABEL = "#{rank} · {document} · {where} · RRF {score:.4f} · {provenance}"
PAGE = "第 {page} 页"
LINES = "第 {start}–{end} 行"
HIT_META = "知识库 {kb} · {heading}"
CITATION_LABEL = "[{n}] {document} · {where}"
CITATIONS_HEADER = "引用 Citations（点击查看原文）"

# Agentic rounds (shared with the agent page through app/rounds.py)
ROUND_RUNNING = "第 {n} 轮 Round {n} · 检索中… searching"
ROUND_SUFFICIENT = "第 {n} 轮 Round {n} · 证据充分 sufficient ✓"
ROUND_MISSING = "第 {n} 轮 Round {n} · 仍缺 missing：{missing}"
ROUND_ASPECTS = "**方面 Aspects**：{aspects}"
ROUND_GAPS = "**针对缺口 Aimed at**：{missing}"
ROUND_QUERIES = "**查询 Queries**"
ROUND_QUERY_LINE = "- {query} — {hits} 条 hits（{counts}）"
ROUND_HITS_BY_STRATEGY = "**各策略命中 Hits by strategy**：{counts}"
ROUND_NEW_EVIDENCE = "**新证据 New evidence**：{new} 条（累计 total {total}）"
ROUND_VERDICT_OK = "**结论 Verdict**：证据充分 sufficient（{judge}）"
ROUND_VERDICT_MISSING = "**结论 Verdict**：证据不足 not sufficient（{judge}）"
ROUND_COVERED = "已覆盖 Covered：{aspects}"
ROUND_MISSING_LINE = "仍缺 Missing：{aspects}"
JUDGE = {"llm": "大模型判定 LLM judge", "coverage": "关键词覆盖判定 term coverage"}
NO_NEW_QUERIES = (
    "没有新的查询可发，用已有证据作答。 No new query left; answering from the evidence."
)
MERGED = "合并证据 Merged evidence：{evidence} 条（按方面 by aspect：{by_aspect}）"
NONE = "无 none"
RESOLVED = "结合上文，理解为 Read with the earlier turns as：{question}"
