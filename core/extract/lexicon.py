"""Word lists the offline heuristics lean on: what is a term's head, what is too generic, and
which well-known acronyms name what kind of thing.

Kept apart from the rules so that tuning a list never touches the logic. The lists are small and
biased towards security and standards texts (the documents Zhixing is built for); a word missing
from them still becomes an entity of type `concept` when the rules find it.
"""

from __future__ import annotations

from ..text.english import STOP_WORDS

__all__ = [
    "ACRONYM_STOP",
    "ACRONYM_TYPES",
    "EN_CONTROL_HEADS",
    "EN_CONTROL_MODIFIERS",
    "EN_GENERIC",
    "EN_GENERIC_TAILS",
    "EN_HEADS",
    "EN_MODIFIER_STOP",
    "EN_SINGLE_OK",
    "EN_VERB_OPENERS",
    "EN_VULNERABILITY_HEADS",
    "GENERIC_HEADINGS",
    "TECH_NAMES",
    "ZH_ADJ_START",
    "ZH_CONTROL_SUFFIXES",
    "ZH_GENERIC_TAILS",
    "ZH_HEAD_VERBS",
    "ZH_IDIOM_CHARS",
    "ZH_LOCALIZERS",
    "ZH_MODIFIER_VERBS",
    "ZH_NOUN_FLAGS",
    "ZH_STOP",
    "ZH_TECH_VERBS",
    "ZH_VULNERABILITY_SUFFIXES",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _suffixes(text: str) -> tuple[str, ...]:
    return tuple(text.split())  # a tuple, for str.endswith


# Acronym -> entity type; an acronym not listed is a `concept`.
ACRONYM_TYPES: dict[str, str] = {
    **dict.fromkeys(
        _words(
            "XSS CSRF XSRF SSRF XXE LFI RFI IDOR RCE DOS DDOS SQLI CRLF MITM REDOS SSTI BOLA BFLA"
        ),
        "vulnerability",
    ),
    **dict.fromkeys(
        _words("OWASP NIST MITRE IETF W3C ISO IEC CISA NSA ENISA ANSSI IEEE ICANN CNCF CERT"),
        "organization",
    ),
    **dict.fromkeys(_words("ASVS MASVS SAMM DSS GDPR HIPAA FIPS CAPEC CWE CVE CVSS"), "standard"),
    **dict.fromkeys(
        _words(
            "MFA 2FA WAF CSP HSTS CORS SRI RBAC ABAC ACL TOTP HOTP OTP CAPTCHA DLP IDS IPS SIEM"
        ),
        "control",
    ),
    **dict.fromkeys(
        _words(
            "SQL HQL NOSQL HTTP HTTPS TLS SSL DTLS HTML CSS JSON XML YAML LDAP SMTP IMAP POP3 DNS "
            "URL URI REST SOAP API JWT JWE JWS JWK SAML OIDC SSO AES RSA DES SHA MD5 HMAC PBKDF2 ORM "
            "DOM SVG PDF CSV JVM JDBC ODBC AWS GCP SSH FTP SFTP TCP UDP IP GRAPHQL WASM XPATH XSLT "
            "CDN VPN PKI CA OCSP CRL ECDSA ECDH DH GCM CBC ECB SMS"
        ),
        "technology",
    ),
}

# Upper-case words that are emphasis, markers or Roman numerals rather than acronyms.
ACRONYM_STOP = _words(
    "A I II III IV VI VII VIII IX XI XII L1 L2 L3 OK ID NO YES AND OR NOT THE TO OF IN IS IT "
    "ON AT BY BE IF AN AS ALL ANY MUST SHALL SHOULD MAY NEVER ALWAYS ONLY NOTE NOTES WARNING TODO "
    "TIP TIPS FAQ IMPORTANT REALLY STRONGLY DO DON DONT NONE TBD NA N/A AKA PS US UK EU ETC E.G "
    "GET POST PUT DELETE PATCH HEAD TRUE FALSE NULL DATA HERE "
    # SQL keywords, from code spans such as `SELECT ... FOR UPDATE`
    "SELECT FROM WHERE FOR UPDATE INSERT INTO VALUES JOIN ORDER GROUP UNION DROP TABLE LIKE SET "
    "LIMIT"
)

# Mixed-case names of technologies, matched as written.
TECH_NAMES = _words(
    "JavaScript TypeScript OAuth OpenID WebAuthn NoSQL GraphQL PostgreSQL MySQL MongoDB SQLite "
    "WebSocket WebSockets PowerShell GitHub GitLab jQuery Node.js React Angular Kubernetes Docker "
    "Python Java PHP Ruby Golang Rust Kotlin Swift Android iOS Linux Windows macOS Redis "
    "Spring Django Flask Express Rails Laravel ASP.NET .NET Hibernate Jackson Log4j OpenSSL "
    "BouncyCastle Argon2id Argon2 bcrypt scrypt XPath XQuery XSLT SQLAlchemy JSONP"
)

# English head nouns: a noun phrase is up to three modifiers and one of these.
EN_VULNERABILITY_HEADS = _words(
    "injection injections attack attacks forgery scripting hijacking overflow overflows traversal "
    "inclusion pollution fixation clickjacking spoofing tampering smuggling poisoning "
    "deserialization vulnerability vulnerabilities exploit exploits leak leakage disclosure "
    "escalation bypass redirect redirects takeover enumeration stuffing phishing"
)
EN_CONTROL_HEADS = _words(
    "validation encoding escaping hashing encryption sanitization sanitisation authentication "
    "authorization authorisation verification filtering whitelisting allowlisting allow-listing "
    "pinning signing limiting throttling logging monitoring auditing isolation sandboxing "
    "control controls binding parameterization policy policies defense defence defenses defences "
    "mitigation mitigations protection"
)
EN_HEADS = (
    EN_VULNERABILITY_HEADS
    | EN_CONTROL_HEADS
    | _words(
        "statement statements query queries procedure procedures header headers cookie cookies token tokens session sessions password passwords "
        "credential credentials key keys certificate certificates secret secrets parameter "
        "parameters framework frameworks library libraries function functions method methods "
        "protocol protocols algorithm algorithms cipher ciphers hash hashes salt storage "
        "mechanism mechanisms filter filters list lists sandbox server servers database "
        "databases request requests response responses input output command commands "
        "interpreter interpreters parser parsers template templates encoder encoders attribute "
        "attributes privilege privileges permission permissions role roles access management "
        "principle model models concatenation code flaw flaws weakness weaknesses endpoint "
        "endpoints identifier identifiers scheme schemes standard specification context "
        "browser browsers origin application applications service services account accounts"
    )
)
# Modifiers that make a plain head a control: "prepared statements", "parameterized queries".
EN_CONTROL_MODIFIERS = _words("prepared parameterized parameterised parametrized stored")
# Heads that name something on their own ("encryption"); others need a modifier ("user input").
EN_SINGLE_OK = _words(
    "encryption hashing authentication authorization authorisation sanitization sanitisation "
    "clickjacking deserialization phishing escaping pinning sandboxing parameterization "
    "injection cryptography"
)
# Trailing words that add nothing to a term: "SQL injection attacks" is "SQL injection".
EN_GENERIC_TAILS = _words(
    "attack attacks flaw flaws vulnerability vulnerabilities issue issues bug bugs risk risks "
    "problem problems"
)
# Words that cannot modify a head: function words (core/text/english.py), pronouns, verbs,
# adverbs, vague adjectives.
EN_MODIFIER_STOP = STOP_WORDS | _words(
    "us without onto over under about "
    "while whose all any some "
    "each every either neither both few many more most much other others same own only very "
    "also just even still already may might must shall should "
    "done having use uses used using make makes made "
    "allow allows allowed avoid avoids ensure ensures prevent prevents provide provides provided "
    "include includes including enable enables require requires required need needs get gets set "
    "sets see take takes give gives let lets help helps new old good bad best better simple "
    "common typical typically different various several certain specific general possible "
    "potential proper properly correct appropriate important additional following above below "
    "first second third last next one two three four five example examples e.g i.e etc via per "
    "like unlike always never often usually mostly highly strongly really instead rather "
    "against within between among before after during until since because though although "
    "whether cannot can't don't doesn't isn't aren't won't aka vs "
    # verbs that open a phrase ("write database queries", "stop writing dynamic queries")
    "write writes read reads stop stops execute executes enter enters pass passes change changes "
    "define defines build builds create creates apply applies call calls check checks send sends "
    "receive return returns run runs perform performs implement implements protect protects "
    "mitigate mitigates detect detects handle handles generate generates accept accepts reject "
    "configure configures support supports add adds remove removes replace replaces insert "
    "inserts update updates select selects contain contains store stores validate validates "
    "encode encodes escape escapes sanitize sanitizes verify verifies consider considers keep "
    "keeps follow follows bypass bypasses inject injects exploit exploits find finds show shows "
    "called known based related means right wrong large small big huge high low broad wide "
    "narrow super less lightweight"
)
# Words after which the next word is a verb, not a modifier: "to escape", "must never store".
EN_VERB_OPENERS = _words(
    "to must should shall will would can could may might never not always please cannot "
    "don't do does did also only first then"
)
# Single English words too generic to be an entity.
EN_GENERIC = EN_MODIFIER_STOP | _words(
    "data system systems application applications user users input output code file files "
    "value values thing things way ways case cases part parts type types kind kinds number "
    "information content section document page time option options step steps approach "
    "attacker attackers developer developers people person string strings request requests "
    "response responses result results query queries attack attacks list lists key keys "
    "service services server servers function functions method methods"
)

# Headings that only say where one is in a document ("Introduction", "参考文献").
GENERIC_HEADINGS = _words(
    "introduction overview summary background conclusion conclusions references reference "
    "examples example scope goals goal objectives objective purpose description notes "
    "resources links appendix glossary terminology definitions contents related other "
    "控制目标 参考文献 参考资料 参考 简介 概述 介绍 引言 前言 总结 小结 附录 目标 范围 术语 示例 "
    "说明 背景 结论 定义 目录 致谢 其他 相关资料 延伸阅读"
)

# jieba part-of-speech flags that can be (part of) a Chinese term.
ZH_NOUN_FLAGS = frozenset({"n", "nz", "nt", "nl", "ng", "nr", "nrt", "ns", "vn", "l", "j", "eng"})
# Verbs that, inside a compound, act as nouns of the field: "SQL注入", "输出编码", "跨站脚本攻击".
ZH_TECH_VERBS = _words(
    "注入 攻击 编码 解码 验证 转义 加密 解密 过滤 查询 认证 授权 伪造 溢出 泄露 泄漏 劫持 篡改 "
    "绕过 重定向 上传 下载 签名 哈希 散列 存储 传输 调用 执行 登录 注销 管理 控制 检测 扫描 审计 "
    "监控 备份 访问 校验 净化 消毒 清理 序列化 反序列化 遍历 污染 固定 混淆 提权 嗅探 欺骗 钓鱼 "
    "防护 输入 输出 跨站 跨 包含 处理 记录 配置 隔离 限制 检查 请求 响应 引用"
)
# Of those, the ones that may start a compound ("输入验证"); "验证X" is a verb phrase instead.
ZH_MODIFIER_VERBS = _words("输入 输出 跨站 跨 远程 本地 动态 静态 双因素 多因素 反序列化 序列化")
# Nominal verbs that end a term ("注入攻击"): a field verb may start a compound before one of them.
ZH_HEAD_VERBS = _words("攻击 注入 伪造 溢出 劫持 篡改 泄露 泄漏 绕过 遍历 污染")
# Adjectives and prefixes that may open a compound ("敏感数据", "反序列化漏洞") but not end one.
ZH_ADJ_START = ZH_MODIFIER_VERBS | _words(
    "安全 恶意 敏感 可信 不可信 不安全 私有 公共 内部 外部 临时 随机 明文 密文 强 弱 反 单 双 最小"
)
# Trailing words that add nothing to a compound of three or more words.
ZH_GENERIC_TAILS = _words("措施 机制 方法 方式 功能 问题 情况 内容 要求 过程 方面 能力 行为")
# Words after a noun that place it ("身份验证时", "浏览器中") rather than name it.
ZH_LOCALIZERS = _words("时 中 上 下 内 外 前 后 间 里 处 侧")
# Characters of four-character idioms ("至关重要", "显而易见"), which jieba tags like terms
# ("操作系统" is an `l` word too); an `l`/`i` word holding one of them is not a term.
ZH_IDIOM_CHARS = frozenset("之而以其不无所可至有于乎者也然则亦皆各每此彼必甚极最更很")
ZH_VULNERABILITY_SUFFIXES = _suffixes(
    "注入 攻击 漏洞 溢出 劫持 伪造 篡改 泄露 泄漏 绕过 遍历 污染 欺骗 钓鱼 提权 文件包含"
)
ZH_CONTROL_SUFFIXES = _suffixes(
    "编码 验证 加密 转义 过滤 校验 认证 授权 控制 哈希 签名 净化 消毒 沙箱 沙盒 审计 防护 白名单 隔离 参数化查询"
)
# Chinese words too generic to be an entity on their own.
ZH_STOP = _words(
    "系统 应用 应用程序 程序 数据 用户 信息 功能 方法 方式 情况 问题 内容 部分 类型 要求 措施 "
    "时候 方面 服务 使用 需要 能力 环境 结果 过程 目标 项目 文档 本文 安全 对象 技术 工具 例如 "
    "以及 可能 所有 任何 其他 相关 特定 适当 正确 有效 某些 这种 这些 那些 人员 开发人员 攻击者 "
    "描述 注意 示例 参考 文献 时间 地方 东西 事情 作用 意义 原因 形式 条件 状态 方案 机制 行为 "
    "防御措施 安全措施 对策 级别 标准 规定 规范 原则 建议 示意 版本 页面 字段 名称 值 位置 来源 "
    "用途 实现 组织 部署 开发 测试 设计 架构 场景 领域 层面 中 上 下 者 性 化 所需 专门 精心 自动 "
    "手动 发展 以下 上述 最终 目前 当前 过去 未来 今后 前提 基础 重要 关键 主要 一般 通常 控制目标 "
    "有关 请参阅 参阅 声称 更多 若需 情形 例子 举例 方法论 步骤 事项 人们 大家 团队 公司 企业"
)
