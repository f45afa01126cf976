"""The agent page (智能体): a chat over the knowledge bases, answered by the agentic loop."""

TITLE = "智能体 Agent"
CAPTION = (
    "用 @知识库名 指定要查的知识库（@all 为全部），或在右侧选择。"
    "每个问题都会多轮检索，逐轮显示，再给出带引用的回答。"
)
CHAT_PLACEHOLDER = "提问，例如：@sample 如何安全地存储密码？"
SCOPE_LABEL = "知识库 Knowledge bases"
SCOPE_ALL = "@all"
SCOPE_ALL_LABEL = "@all 全部知识库"
NEW_CONVERSATION = "新对话 New conversation"
UNKNOWN_MENTION = "没有名为 {names} 的知识库，已忽略。可用的知识库：{known}。"
EMPTY_QUESTION = "请在 @知识库 之外写上问题。 Please type a question after the @mentions."
SCOPE_NOTE = "知识库：{names}"
