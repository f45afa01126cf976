"""Chinese: the jieba adapter (part-of-speech tagging, loaded once, on first use) and the
function characters.

This module is the only one that imports jieba (Milvus segments the index with its own). Loading the dictionary
takes about a second, so it happens lazily, under a lock, the first time Chinese text arrives; a
process that never enriches Chinese never pays for it. The tokenizer is a private one with a few
terms of the field added (jieba cuts "会话" into "会/话"), so jieba's shared default tokenizer,
which other code may use, is left exactly as jieba ships it.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import lru_cache
from typing import Any

from .english import words

__all__ = [
    "CJK",
    "CJK_CHARS",
    "CJK_RUN",
    "FUNCTION_CHARACTERS",
    "QUESTION_WORDS",
    "ZH_DOMAIN_WORDS",
    "pos_tag",
]

# The one definition of a CJK ideograph (unified and extension A, and the compatibility block),
# for every module that tells Chinese text apart: a character class, one character, a run.
CJK_CHARS = "\u3400-\u9fff\uf900-\ufaff"
CJK = re.compile(f"[{CJK_CHARS}]")
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")

# Particles, pronouns and question words: a passage that answers has no need to contain them.
FUNCTION_CHARACTERS = frozenset(
    "的了吗呢吧啊是在有和与及或什么哪谁几何为怎样如其这那些个之于对把被从到就都也还又"
)
# Words that say how something is asked, not what about: question words, particles,
# conjunctions, prepositions, modal verbs. Query terms (core/search/query_terms.py) and answer
# sentences (core/answer.py) both leave them out, each adding a few of its own.
QUESTION_WORDS = words(
    "什么 哪些 哪个 哪里 如何 怎么 怎样 怎么样 为什么 是否 有 是 的 了 和 与 及 以及 或 或者 "
    "在 上 中 下 对 对于 关于 里 请 一下 需要 应该 应当 要求 方面 可以 能 吗 呢"
)
# Terms of the field that jieba's dictionary cuts apart ("会话" comes out as "会/话").
ZH_DOMAIN_WORDS = words(
    "会话 会话管理 会话固定 跨站 跨站点 跨站脚本 跨站请求伪造 注入攻击 身份认证 多因素认证 "
    "双因素认证 参数化查询 输入验证 输出编码 访问控制 拒绝服务 反序列化 序列化 白名单 黑名单 "
    "允许列表 拒绝列表 沙箱 沙盒 哈希 加盐 盐值 密钥 令牌 凭证 凭据 重定向 点击劫持 命令注入 "
    "路径遍历 目录遍历 缓冲区溢出 整数溢出 内容安全策略 同源策略 跨域 最小权限 纵深防御 转义 "
    "安全配置 错误处理 日志记录 服务器端请求伪造 文件上传 文件包含 本地文件包含 远程文件包含 "
    "模板注入 敏感数据 业务逻辑 撞库 暴力破解 口令 数字证书 证书固定 密码哈希 安全编码"
)

_lock = threading.Lock()
_tagger: Any = None


def _load() -> Any:
    global _tagger
    if _tagger is None:
        with _lock:
            if _tagger is None:
                import jieba
                import jieba.posseg

                # jieba logs "Building prefix dict ..." at DEBUG on a handler of its own.
                jieba.setLogLevel(logging.WARNING)
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                for word in sorted(ZH_DOMAIN_WORDS):  # sorted: the same dictionary every run
                    tokenizer.add_word(word, tag="n")
                tagger = jieba.posseg.POSTokenizer(tokenizer)
                tagger.lcut("初始化")  # moves the added words' tags into the tagger now
                _tagger = tagger
    return _tagger


@lru_cache(maxsize=4096)
def pos_tag(text: str) -> tuple[tuple[str, str], ...]:
    """Cut `text` into (word, flag) pairs with jieba's part-of-speech tags; they cover it whole."""
    # Without the HMM: it invents words from unknown characters ("测试项才", "请参阅" as nouns),
    # which would become entities; the dictionary and the added terms are enough here.
    return tuple((pair.word, pair.flag) for pair in _load().cut(text, HMM=False))
