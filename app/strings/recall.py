"""The recall page (召回), a notebook of questions: its cells, and the rounds and hits they show
(app/rounds.py shares the hits, answers and rounds with the agent page)."""

from . import localized


class ZH:
    TITLE = "召回笔记本"
    CAPTION = (
        "每个问题是一个单元：检索（只看命中）、回答（命中 + 带引用的回答）或多轮（Agentic，逐轮显示）。"
        "单元会保存，可编辑、重跑、移动、折叠、删除；笔记本可导出为 Markdown 再导入。"
    )
    QUERY_LABEL = "问题或关键词"
    QUERY_PLACEHOLDER = "例如：如何防止会话固定攻击？"
    SCOPE_LABEL = "范围"
    SCOPE_ALL = "@all"
    SCOPE_ALL_LABEL = "@all 全部知识库"
    STRATEGIES_LABEL = "检索策略"
    TOP_K_LABEL = "返回条数"
    MODE_LABEL = "方式"
    MODES = {"search": "检索", "answer": "回答", "agentic": "多轮 Agentic"}
    RUN_BUTTON = "运行"
    ENTER_HINT = "在问题框里按 Enter 即运行。"
    SAVE_AND_RUN = "保存并重跑"
    RUN_HELP = "重跑"
    EDIT_HELP = "编辑"
    UP_HELP = "上移"
    DOWN_HELP = "下移"
    COLLAPSE_HELP = "折叠"
    EXPAND_HELP = "展开"
    DELETE_HELP = "删除"
    DEFAULT_STRATEGIES = "默认策略"
    RAN_AT = "{when} 运行 · {seconds:.1f} 秒"
    IMPORTED = "导入的回答"
    NOT_RUN = "尚未运行：点 ▶ 运行。"
    WITHHELD = (
        "这个单元上次运行时查过你现在无权查看的知识库，结果已隐藏；点 ▶ 在你能看的知识库里重跑。"
    )
    NO_CELLS = "笔记本是空的：在下面写下第一个问题。"
    NOT_FOUND_WITH_HITS = (
        "命中的片段没有覆盖问题的要点，所以不作回答；下面是最接近的片段，供你自己判断。"
    )
    # Answer.note: why an answer written with a model is the hits' own sentences instead.
    ANSWER_NOTES = {
        "extractive: the model found nothing": "模型说没找到，但命中的片段能回答：以下是片段原句。",
        "extractive: the model's answer was unusable": "模型的回答不可用：以下是命中片段的原句。",
        "extractive: the model's search found nothing": (
            "模型的检索没有找到答案，不用模型的检索找到了：以下是它命中片段的原句。"
        ),
    }
    ERROR_PREFIX = "出错了："
    EXPORT = "导出 Markdown"
    IMPORT = "导入"
    IMPORT_FILE = "笔记本文件（.md）"
    IMPORT_BUTTON = "导入单元"
    IMPORT_NONE = "请先选择一个 .md 文件。"
    IMPORTED_CELLS = "已导入 {n} 个单元。"

    EMPTY_QUERY = "请输入问题或关键词后再运行。"
    QUESTION_TOO_LONG = "问题有 {length:,} 个字符，超过了 {limit:,} 个字符的上限；请删减后再运行。"
    NO_STRATEGY = "请至少选择一种检索策略。"
    SEARCHING = "正在检索…"
    HITS_HEADER = "召回结果 · {count} 条"
    EVIDENCE_HEADER = "证据 · {count} 条"
    NO_HITS = "没有召回任何片段。"

    # Hits and answers
    HIT_LABEL = "#{rank} · {document} · {where} · RRF {score:.4f} · {provenance}"
    PAGE = "第 {page} 页"
    OCR = "OCR"  # the text was read by OCR from a scanned page
    LINES = "第 {start}–{end} 行"
    HIT_META = "知识库 {kb} · {heading}"
    CITATION_LABEL = "[{n}] {document} · {where}"
    CITATIONS_HEADER = "引用（点击查看原文，引用的句子已标出）"

    # Agentic rounds
    ROUND_RUNNING = "第 {n} 轮 · 检索中…"
    ROUND_SUFFICIENT = "第 {n} 轮 · 证据充分 ✓"
    ROUND_MISSING = "第 {n} 轮 · 仍缺：{missing}"
    ROUND_ASPECTS = "**方面**：{aspects}"
    ROUND_GAPS = "**针对缺口**：{missing}"
    ROUND_QUERIES = "**查询**"
    ROUND_QUERY_LINE = "- {query} — {hits} 条（{counts}）"
    ROUND_HITS_BY_STRATEGY = "**各策略命中**：{counts}"
    ROUND_NEW_EVIDENCE = "**新证据**：{new} 条（累计 {total}）"
    ROUND_VERDICT_OK = "**结论**：证据充分（{judge}）"
    ROUND_VERDICT_MISSING = "**结论**：证据不足（{judge}）"
    ROUND_COVERED = "已覆盖：{aspects}"
    ROUND_MISSING_LINE = "仍缺：{aspects}"
    JUDGE = {"llm": "大模型判定", "coverage": "关键词覆盖判定"}
    NO_NEW_QUERIES = "没有新的查询可发，用已有证据作答。"
    MERGED = "合并证据：{evidence} 条（按方面：{by_aspect}）"
    NONE = "无"
    RESOLVED = "结合上文，理解为：{question}"


class EN(ZH):
    TITLE = "Recall notebook"
    CAPTION = (
        "Each question is a cell: Search (hits only), Answer (hits and a cited answer) or"
        " Agentic (several rounds of search, shown as they run). Cells are kept; edit, re-run,"
        " move, fold or delete them; export the notebook to Markdown and import it back."
    )
    QUERY_LABEL = "Question or keywords"
    QUERY_PLACEHOLDER = "e.g. How do I prevent session fixation?"
    SCOPE_LABEL = "Scope"
    SCOPE_ALL_LABEL = "@all every knowledge base"
    STRATEGIES_LABEL = "Strategies"
    TOP_K_LABEL = "Top-K"
    MODE_LABEL = "Mode"
    MODES = {"search": "Search", "answer": "Answer", "agentic": "Agentic"}
    RUN_BUTTON = "Run"
    ENTER_HINT = "Press Enter in the question box to run it."
    SAVE_AND_RUN = "Save & re-run"
    RUN_HELP = "Re-run"
    EDIT_HELP = "Edit"
    UP_HELP = "Move up"
    DOWN_HELP = "Move down"
    COLLAPSE_HELP = "Collapse"
    EXPAND_HELP = "Expand"
    DELETE_HELP = "Delete"
    DEFAULT_STRATEGIES = "default strategies"
    RAN_AT = "ran {when} · {seconds:.1f} s"
    IMPORTED = "imported answer"
    NOT_RUN = "Not run yet: press ▶."
    WITHHELD = (
        "This cell last consulted a knowledge base you may no longer see, so its result is"
        " hidden; press ▶ to run it again over what you may see."
    )
    NO_CELLS = "The notebook is empty: type a first question below."
    NOT_FOUND_WITH_HITS = (
        "The hits below do not cover the question's key terms, so no answer is given from them;"
        " they are the closest passages, for you to judge."
    )
    ANSWER_NOTES = {
        "extractive: the model found nothing": (
            "The model found nothing, but the hits answer: these are their own sentences."
        ),
        "extractive: the model's answer was unusable": (
            "The model's answer was unusable: these are the hits' own sentences."
        ),
        "extractive: the model's search found nothing": (
            "The model's search found no answer; the search without it did: these are its hits'"
            " own sentences."
        ),
    }
    ERROR_PREFIX = "Error: "
    EXPORT = "Export Markdown"
    IMPORT = "Import"
    IMPORT_FILE = "Notebook file (.md)"
    IMPORT_BUTTON = "Import cells"
    IMPORT_NONE = "Choose a .md file first."
    IMPORTED_CELLS = "Imported {n} cells."

    EMPTY_QUERY = "Please type a question or keywords first."
    QUESTION_TOO_LONG = (
        "The question is {length:,} characters long, over the limit of {limit:,}; shorten it"
        " and run it again."
    )
    NO_STRATEGY = "Please pick at least one strategy."
    SEARCHING = "Searching…"
    HITS_HEADER = "Hits · {count}"
    EVIDENCE_HEADER = "Evidence · {count}"
    NO_HITS = "No chunk matched."

    HIT_LABEL = "#{rank} · {document} · {where} · RRF {score:.4f} · {provenance}"
    PAGE = "page {page}"
    OCR = "OCR"
    LINES = "lines {start}–{end}"
    HIT_META = "knowledge base {kb} · {heading}"
    CITATIONS_HEADER = "Citations (open one for the source, the cited sentences marked)"

    ROUND_RUNNING = "Round {n} · searching…"
    ROUND_SUFFICIENT = "Round {n} · sufficient ✓"
    ROUND_MISSING = "Round {n} · missing: {missing}"
    ROUND_ASPECTS = "**Aspects**: {aspects}"
    ROUND_GAPS = "**Aimed at**: {missing}"
    ROUND_QUERIES = "**Queries**"
    ROUND_QUERY_LINE = "- {query} — {hits} hits ({counts})"
    ROUND_HITS_BY_STRATEGY = "**Hits by strategy**: {counts}"
    ROUND_NEW_EVIDENCE = "**New evidence**: {new} (total {total})"
    ROUND_VERDICT_OK = "**Verdict**: sufficient ({judge})"
    ROUND_VERDICT_MISSING = "**Verdict**: not sufficient ({judge})"
    ROUND_COVERED = "Covered: {aspects}"
    ROUND_MISSING_LINE = "Missing: {aspects}"
    JUDGE = {"llm": "LLM judge", "coverage": "term coverage"}
    NO_NEW_QUERIES = "No new query left; answering from the evidence."
    MERGED = "Merged evidence: {evidence} (by aspect: {by_aspect})"
    NONE = "none"
    RESOLVED = "Read with the earlier turns as: {question}"


__getattr__ = localized(ZH, EN)
