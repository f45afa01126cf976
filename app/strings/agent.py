"""The agent page (智能体): tasks over a workspace, researched in the knowledge bases."""

from . import localized


class ZH:
    TITLE = "智能体"
    CAPTION = (
        "交给智能体一个任务（例如代码审计）：它先查阅知识库，据此修订计划，在工作区里逐项执行，"
        "最后给出引用知识库条款的报告。用 @知识库名 指定要查的知识库（@all 为全部），或在右侧选择。"
    )
    ASK_IN_NOTEBOOK = "只想提问？到召回笔记本"
    SCOPE_LABEL = "知识库"
    SCOPE_ALL = "@all"
    SCOPE_ALL_LABEL = "@all 全部知识库"
    SEPARATOR = "、"  # between the names of a list in a sentence
    NEW_CONVERSATION = "新对话"
    UNKNOWN_MENTION = "没有名为 {names} 的知识库，已忽略。可用的知识库：{known}。"
    EMPTY_QUESTION = "请在 @知识库 之外写上任务。"
    SCOPE_NOTE = "知识库：{names}"

    # Tasks
    TASK_PLACEHOLDER = (
        "描述任务，例如：对这个 Java SpringBoot 项目进行代码审计，参考 @sample 中的规范"
    )
    WORKSPACE_UPLOAD = "工作区：项目压缩包 (.zip / .tar.gz)"
    WORKSPACE_SAMPLE = "使用内置示例项目 samples/springboot-shop（含若干已知漏洞）"
    WORKSPACE_NONE = "没有工作区：任务只查阅知识库。"
    RESEARCH = "知识调研"
    RESEARCH_DONE = "知识调研 · {evidence} 条证据，{sections} 个相关章节"
    PLAN_BEFORE = "调研前的计划"
    PLAN_AFTER = "调研后的计划（依据知识库修订）"
    PLAN_CHANGED = "计划已根据知识库修订：{before} 步 → {after} 个具体子任务。"
    SUBTASK_RUNNING = "子任务 {n} · {title}"
    SUBTASK_DONE = "子任务 {n} · {title} · {findings} 个发现 · {calls} 次工具调用 ✓"
    TOOL_CALL = "🔧 `{tool}`({args})"
    TOOL_RESULT_OK = "结果"
    TOOL_RESULT_REFUSED = "被拒绝"
    FINDING = "⚠️ **[{severity}]** {title} — `{file}:{line}`"
    REPORT = "报告"
    DOWNLOAD = "下载报告（Markdown）"
    DOWNLOAD_JSON = "下载 JSON"
    DOWNLOAD_SARIF = "下载发现（SARIF）"
    DOWNLOAD_CSV = "下载发现（CSV）"
    BUDGET = "模型调用预算：最多 {calls} 次（其中复核候选发现 {confirmations} 次），知识调研另计。"
    ANALYSIS = "数据流分析：{files} 个 Java 文件，{seconds} 秒，{findings} 个候选发现"
    TASK_FINDINGS = "{n} 个发现"

    # Conversations
    CONVERSATION_LABEL = "对话"
    CONVERSATION_OPTION = "{title} · {turns} 轮 · {when}"
    CONVERSATION_UNTITLED = "（新对话）"
    HIDDEN_TURNS = "有 {n} 轮问答查过你现在无权查看的知识库，已隐藏。"


class EN(ZH):
    TITLE = "Agent"
    CAPTION = (
        "Give the agent a task (a code audit, say): it first consults the knowledge bases, revises"
        " its plan from what it finds, works through the workspace step by step, and ends with a"
        " report that cites the knowledge bases' clauses. Name the knowledge bases to consult with"
        " @name (@all for every one), or pick them on the right."
    )
    ASK_IN_NOTEBOOK = "Just a question? Ask it in the Recall notebook"
    SCOPE_LABEL = "Knowledge bases"
    SCOPE_ALL_LABEL = "@all every knowledge base"
    SEPARATOR = ", "
    NEW_CONVERSATION = "New conversation"
    UNKNOWN_MENTION = "No knowledge base is named {names}; ignored. Knowledge bases: {known}."
    EMPTY_QUESTION = "Please describe the task after the @mentions."
    SCOPE_NOTE = "Knowledge bases: {names}"

    TASK_PLACEHOLDER = (
        "Describe the task, e.g. Audit this Java Spring Boot project against the rules in @sample"
    )
    WORKSPACE_UPLOAD = "Workspace: a project archive (.zip / .tar.gz)"
    WORKSPACE_SAMPLE = (
        "Use the bundled sample project samples/springboot-shop (it has a few known"
        " vulnerabilities)"
    )
    WORKSPACE_NONE = "No workspace: the task only consults the knowledge bases."
    RESEARCH = "Research"
    RESEARCH_DONE = "Research · {evidence} pieces of evidence, {sections} relevant sections"
    PLAN_BEFORE = "Plan before research"
    PLAN_AFTER = "Plan after research (revised from the knowledge bases)"
    PLAN_CHANGED = (
        "The plan was revised from the knowledge bases: {before} steps → {after} concrete subtasks."
    )
    SUBTASK_RUNNING = "Subtask {n} · {title}"
    SUBTASK_DONE = "Subtask {n} · {title} · {findings} findings · {calls} tool calls ✓"
    TOOL_RESULT_OK = "result"
    TOOL_RESULT_REFUSED = "refused"
    REPORT = "Report"
    DOWNLOAD = "Download the report (Markdown)"
    DOWNLOAD_JSON = "Download JSON"
    DOWNLOAD_SARIF = "Findings (SARIF)"
    DOWNLOAD_CSV = "Findings (CSV)"
    BUDGET = (
        "Model budget: at most {calls} call(s) ({confirmations} to review candidate findings),"
        " besides the research."
    )
    ANALYSIS = "Data-flow analysis: {files} Java file(s) in {seconds} s, {findings} candidate(s)"
    TASK_FINDINGS = "{n} findings"

    CONVERSATION_LABEL = "Conversation"
    CONVERSATION_OPTION = "{title} · {turns} turns · {when}"
    CONVERSATION_UNTITLED = "(new conversation)"
    HIDDEN_TURNS = "{n} turns consulted knowledge bases you may no longer see; they are hidden."


__getattr__ = localized(ZH, EN)
