"""The shell: navigation, sidebar, empty state, errors."""

APP_TITLE = "知行 Zhixing"
TAGLINE = "本地优先的知识库，内置智能体 · A local-first knowledge base with an agent built in"

NAV_BUILD = "构建 Build"
NAV_GRAPH = "图谱 Graph"
NAV_RECALL = "召回 Recall"
NAV_AGENT = "智能体 Agent"
NAV_SETTINGS = "设置 Settings"

SIDEBAR_KBS = "知识库"
SIDEBAR_NO_KB = "还没有知识库"
SIDEBAR_KB_LINE = "{name} · {documents} 篇文档 · {chunks} 块"
SIDEBAR_LLM = "大模型"
SIDEBAR_LLM_OFFLINE = "内置离线模式 (built-in offline mode)"
SIDEBAR_LLM_ONLINE = "{model} @ {endpoint}"
SIDEBAR_EMBEDDING = "向量模型"

EMPTY_TITLE = "欢迎使用知行"
EMPTY_BODY = (
    "还没有知识库。可以在「构建」页上传自己的文档，或者先用内置的示例文档"
    "（Java 安全编码规范：中文两篇、英文一篇）建一个示例知识库，一分钟内看到每个页面的效果。"
)
EMPTY_SAMPLE_BUTTON = "建立示例知识库 Build the sample knowledge base"
SAMPLE_KB_NAME = "sample"
SAMPLE_KB_DESCRIPTION = "示例：Java 安全编码规范（中文、英文）"
SAMPLE_BUILDING = "正在建立示例知识库…"
SAMPLE_DONE = "示例知识库已建好：{documents} 篇文档，{chunks} 块。"

ERROR_PREFIX = "出错了："
SERVICE_ERROR = "无法打开知识库目录：{error}"
PAGE_ERROR = "页面出错 The page failed: {error}"

LOGIN_TITLE = "登录 Sign in"
LOGIN_NAME = "用户名 User name"
LOGIN_PASSWORD = "密码 Password"
LOGIN_BUTTON = "登录 Sign in"
LOGIN_OIDC_INTRO = (
    "这台知行服务器通过单点登录识别用户。This server signs users in through single sign-on."
)
LOGIN_OIDC_BUTTON = "单点登录 Sign in with SSO"
LOGIN_NO_USERS = (
    "这台服务器对局域网开放，但还没有任何用户。请在服务器上运行 "
    "`zhixing user add NAME --role admin` 添加管理员后刷新。"
    " This server is shared beyond localhost and has no users yet: add an admin on the server "
    "with `zhixing user add NAME --role admin`, then reload."
)
SIGNED_IN = "已登录：{name}（{role}）"
LOGOUT = "退出登录 Sign out"
READ_ONLY = "你的角色是 {role}：可以搜索、问答和查看图谱；构建和删除需要 editor 或 admin 角色。"
