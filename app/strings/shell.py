"""The shell: navigation, sidebar, empty state, errors, the login form."""

from . import localized


class ZH:
    APP_TITLE = "知行"
    TAGLINE = "本地优先的知识库，内置智能体"

    NAV_BUILD = "构建"
    NAV_GRAPH = "图谱"
    NAV_RECALL = "召回"
    NAV_AGENT = "智能体"
    NAV_ACCOUNT = "账户"
    NAV_SETTINGS = "设置"

    SIDEBAR_KBS = "知识库"
    SIDEBAR_NO_KB = "还没有知识库"
    SIDEBAR_KB_LINE = "{name} · {documents} 篇文档 · {chunks} 块"
    SIDEBAR_KB_BUILDING = (
        "{name} · 正在构建：已读取 {done}/{total} 篇，已索引 {documents} 篇 · {chunks} 块"
    )
    SIDEBAR_LLM = "大模型"
    SIDEBAR_LLM_OFFLINE = "内置离线模式"
    SIDEBAR_LLM_ONLINE = "{model} @ {endpoint}"
    SIDEBAR_EMBEDDING = "向量模型"
    LANGUAGE = "语言 Language"  # both, in either language: whoever reads one finds it

    EMPTY_TITLE = "欢迎使用知行"
    EMPTY_BODY = (
        "还没有知识库。可以在「构建」页上传自己的文档，或者先用内置的示例文档"
        "（Java 安全编码规范：中文两篇、英文一篇）建一个示例知识库，一分钟内看到每个页面的效果。"
    )
    EMPTY_SAMPLE_BUTTON = "建立示例知识库"
    SAMPLE_KB_NAME = "sample"  # a name, not text: the same in every language
    SAMPLE_KB_DESCRIPTION = "示例：Java 安全编码规范（中文、英文）"
    SAMPLE_BUILDING = "正在建立示例知识库…"
    SAMPLE_DONE = "示例知识库已建好：{documents} 篇文档，{chunks} 块。"

    ERROR_PREFIX = "出错了："
    SERVICE_ERROR = "无法打开知识库目录：{error}"
    PAGE_ERROR = "页面出错：{error}"

    LOGIN_TITLE = "登录"
    LOGIN_NAME = "用户名"
    LOGIN_PASSWORD = "密码"
    LOGIN_BUTTON = "登录"
    LOGIN_OIDC_INTRO = "这台知行服务器通过单点登录识别用户。"
    LOGIN_OIDC_BUTTON = "单点登录"
    LOGIN_NO_USERS = (
        "这台服务器对局域网开放，但还没有任何用户。请在服务器上运行 "
        "`zhixing user add NAME --role admin` 添加管理员后刷新。"
    )
    SIGNED_IN = "已登录：{name}（{role}）"
    LOCAL_ONLY = (
        "不登录的知行只回应本机地址（localhost、127.0.0.1）：要用其他名称打开，请先用 "
        "`zhixing user add` 添加用户，再用 `zhixing serve --host 0.0.0.0` 启动，让每个人先登录。"
    )
    LOGOUT = "退出登录"
    READ_ONLY = "你的角色是 {role}：可以搜索、问答和查看图谱；构建和删除需要 editor 或 admin 角色。"


class EN(ZH):
    APP_TITLE = "Zhixing"
    TAGLINE = "A local-first knowledge base with an agent built in"

    NAV_BUILD = "Build"
    NAV_GRAPH = "Graph"
    NAV_RECALL = "Recall"
    NAV_AGENT = "Agent"
    NAV_ACCOUNT = "Account"
    NAV_SETTINGS = "Settings"

    SIDEBAR_KBS = "Knowledge bases"
    SIDEBAR_NO_KB = "No knowledge base yet"
    SIDEBAR_KB_LINE = "{name} · {documents} documents · {chunks} chunks"
    SIDEBAR_KB_BUILDING = (
        "{name} · building: {done}/{total} documents read, {documents} indexed · {chunks} chunks"
    )
    SIDEBAR_LLM = "LLM"
    SIDEBAR_LLM_OFFLINE = "built-in offline mode"
    SIDEBAR_EMBEDDING = "Embedding model"

    EMPTY_TITLE = "Welcome to Zhixing"
    EMPTY_BODY = (
        "There is no knowledge base yet. Upload your own documents on the Build page, or first"
        " build a sample knowledge base from the bundled sample documents (Java secure coding"
        " guidelines: two in Chinese, one in English) and see every page at work within a minute."
    )
    EMPTY_SAMPLE_BUTTON = "Build the sample knowledge base"
    SAMPLE_KB_DESCRIPTION = "Sample: Java secure coding guidelines (Chinese and English)"
    SAMPLE_BUILDING = "Building the sample knowledge base…"
    SAMPLE_DONE = "The sample knowledge base is ready: {documents} documents, {chunks} chunks."

    ERROR_PREFIX = "Error: "
    SERVICE_ERROR = "Cannot open the knowledge base folder: {error}"
    PAGE_ERROR = "The page failed: {error}"

    LOGIN_TITLE = "Sign in"
    LOGIN_NAME = "User name"
    LOGIN_PASSWORD = "Password"
    LOGIN_BUTTON = "Sign in"
    LOGIN_OIDC_INTRO = "This Zhixing server signs users in through single sign-on."
    LOGIN_OIDC_BUTTON = "Sign in with SSO"
    LOGIN_NO_USERS = (
        "This server is shared beyond localhost and has no users yet: add an admin on the server"
        " with `zhixing user add NAME --role admin`, then reload."
    )
    SIGNED_IN = "Signed in as {name} ({role})"
    LOCAL_ONLY = (
        "Zhixing without logins answers only at localhost or 127.0.0.1: to open it under another"
        " name, add users with `zhixing user add` and start it with `zhixing serve --host"
        " 0.0.0.0`, which asks everyone to sign in."
    )
    LOGOUT = "Sign out"
    READ_ONLY = (
        "Your role is {role}: you may search, ask questions and view graphs; building and"
        " deleting need the editor or admin role."
    )


__getattr__ = localized(ZH, EN)
