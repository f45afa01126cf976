"""The account page (账户): who is signed in, and the access tokens of MCP clients
(pages/account.py, app/tokens.py)."""

from . import localized


class ZH:
    TITLE = "账户"
    SIGNED_IN = "已登录：{name}（{role}）"
    LOCAL = "本机访问，未登录：以本机管理员的身份操作。"

    TOKENS_HEADER = "MCP 访问令牌"
    TOKENS_INTRO = (
        "访问令牌让 MCP 客户端（Claude Code、Cursor 等 IDE 中的智能体）通过 `zhixing mcp --http`"
        " 以你的身份检索知识库：每个请求都按你当时的角色和可见范围检查，与你在这里看到的相同。"
        "令牌只在创建时显示一次，知行只保存它的 SHA-256 摘要；不再使用时请撤销。"
    )
    TOKENS_LOCAL = (
        "令牌代表一个已保存的用户，本机访问（未登录）时无法为自己创建：请以用户身份登录后创建，"
        "或在服务器上运行 `zhixing token create 用户名`。"
    )
    TOKEN_LABEL = "名称（用途，例如 Claude Code）"
    TOKEN_DAYS = "有效天数"
    TOKEN_CREATE = "创建令牌"
    TOKEN_CREATED = "令牌 {id} 已创建，有效期至 {until}。它只显示这一次，请现在复制："
    TOKEN_CONFIG = (
        "MCP 客户端的配置（先在服务器上运行 `zhixing mcp --http`；如果用 --host 或 --port"
        " 改了地址，请相应修改 url）："
    )
    TOKENS_MINE = "我的令牌"
    TOKENS_ALL = "所有用户的令牌"
    TOKENS_NONE = "还没有令牌。"
    COLUMNS = {
        "id": "编号",
        "user": "用户",
        "label": "名称",
        "created": "创建时间",
        "expires": "到期时间",
        "last_used": "最近使用",
    }
    NEVER = "从未"
    TOKEN_REVOKE = "撤销令牌"
    TOKEN_REVOKE_BUTTON = "撤销"
    TOKEN_REVOKED = "令牌 {id}（{user}）已撤销：带着它的下一个请求会被拒绝。"


class EN(ZH):
    TITLE = "Account"
    SIGNED_IN = "Signed in as {name} ({role})"
    LOCAL = "Local access without a login: acting as the local admin."

    TOKENS_HEADER = "MCP access tokens"
    TOKENS_INTRO = (
        "An access token lets an MCP client (an agent in Claude Code, Cursor or another IDE) search"
        " the knowledge bases as you through `zhixing mcp --http`: each request is checked with"
        " your role and what you may see at that moment, as here. A token is shown once, when it"
        " is made, and Zhixing keeps only its SHA-256 digest; revoke one you no longer use."
    )
    TOKENS_LOCAL = (
        "A token stands for a stored user, so local access without a login cannot make one for"
        " itself: sign in as a user to make one, or run `zhixing token create NAME` on the server."
    )
    TOKEN_LABEL = "Name (what it is for, e.g. Claude Code)"
    TOKEN_DAYS = "Valid for (days)"
    TOKEN_CREATE = "Create a token"
    TOKEN_CREATED = "Token {id} made, valid until {until}. It is shown only now: copy it."
    TOKEN_CONFIG = (
        "The MCP client's configuration (run `zhixing mcp --http` on the server first; if --host"
        " or --port changed its address, change the url to match):"
    )
    TOKENS_MINE = "My tokens"
    TOKENS_ALL = "Every user's tokens"
    TOKENS_NONE = "No tokens yet."
    COLUMNS = {
        "id": "id",
        "user": "user",
        "label": "name",
        "created": "created",
        "expires": "expires",
        "last_used": "last used",
    }
    NEVER = "never"
    TOKEN_REVOKE = "Revoke a token"
    TOKEN_REVOKE_BUTTON = "Revoke"
    TOKEN_REVOKED = "Token {id} of {user} revoked: the next request that carries it is refused."


__getattr__ = localized(ZH, EN)
