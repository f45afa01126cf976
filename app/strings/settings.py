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
    "builtin = 内置多语言模型（离线）；openai:<model> = 接口上的向量模型，例如 openai:bge-m3"
)
EMBEDDING_WARNING = "更换向量模型后，已有知识库需要用原来的模型才能检索；新模型只用于新建的知识库。"
FROM_ENV = "由环境变量 {name} 设置，这里的修改不会生效。"
TEST = "测试连接 Test connection"
TESTING = "正在测试连接…"
TEST_OFFLINE = "没有配置接口地址或密钥：知行运行在内置离线模式。"
SAVE = "保存 Save"
SAVED = "已保存，新的设置已生效。"
BUSY = "有构建任务正在运行，请等它结束后再保存设置。"
