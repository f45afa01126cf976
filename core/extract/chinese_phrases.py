"""Chinese noun phrases from jieba's part-of-speech tags: runs of nouns, joined with the
field's nominal verbs ("SQL注入", "输出编码", "跨站脚本攻击") and trimmed of what cannot start or
end a term (localizers, adjectives, stray single characters).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..text.chinese import pos_tag
from . import lexicon as lx
from .mention import CJK_CHARS, Mention, overlaps

__all__ = ["chinese_phrases"]

_HAS_CJK = re.compile(f"[{CJK_CHARS}]")
# A Latin word that may open a Chinese compound ("SQL注入"); not "V5" of "V5 验证".
_LATIN = re.compile(r"^[A-Za-z]{2,}[A-Za-z0-9.+#-]*$", re.ASCII)
_LEVEL_TOKEN = re.compile(r"^L\d$")
_Token = tuple[int, int, str, str]  # start, end, word, flag


def chinese_phrases(text: str, taken: Sequence[tuple[int, int]]) -> list[Mention]:
    """Compounds of jieba nouns and the field's nominal verbs: "SQL注入", "跨站脚本攻击"."""
    if not _HAS_CJK.search(text):
        return []
    tokens: list[tuple[int, int, str, str]] = []
    pos = 0
    for word, flag in pos_tag(text):
        tokens.append((pos, pos + len(word), word, flag))
        pos += len(word)
    out: list[Mention] = []
    run: list[tuple[int, int, str, str]] = []
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if not overlaps(token[0], token[1], taken) and _joins(run, token, nxt):
            run.append(token)
            continue
        out.extend(_chinese_mention(text, run))
        run = [token] if not overlaps(token[0], token[1], taken) and _joins([], token, nxt) else []
    out.extend(_chinese_mention(text, run))
    return out


def _cjk_noun(token: tuple[int, int, str, str] | None) -> bool:
    return (
        token is not None
        and bool(_HAS_CJK.search(token[2]))
        and (token[3] in lx.ZH_NOUN_FLAGS or token[2] in lx.ZH_TECH_VERBS)
    )


def _joins(
    run: Sequence[tuple[int, int, str, str]],
    token: tuple[int, int, str, str],
    nxt: tuple[int, int, str, str] | None,
) -> bool:
    word, flag = token[2], token[3]
    if word.isspace():  # "SQL 注入": a space between a Latin word and a Chinese noun
        return bool(run) and run[-1][3] == "eng" and word == " " and _cjk_noun(nxt)
    if flag == "eng":
        return (
            bool(_LATIN.match(word))
            and word not in lx.ACRONYM_STOP
            and not _LEVEL_TOKEN.match(word)
        )
    if flag == "i":  # idioms ("完全符合")
        return False
    if flag == "l":  # fixed phrases: terms ("操作系统") and idioms ("至关重要") alike
        return not lx.ZH_IDIOM_CHARS.intersection(word)
    if flag in lx.ZH_NOUN_FLAGS or word in lx.ZH_ADJ_START:
        return True
    if word in lx.ZH_TECH_VERBS:
        if run:
            return True
        return nxt is not None and nxt[2] in lx.ZH_HEAD_VERBS  # "注入攻击", not "验证应用程序"
    return word == "化" and bool(run)  # "参数化查询"


def _chinese_mention(text: str, run: list[tuple[int, int, str, str]]) -> list[Mention]:
    # Trim what cannot end a term (spaces, adjectives, localizers such as "时", "中", "上") and
    # stray single characters that cannot start one.
    while run and (
        run[-1][2].isspace()
        or (run[-1][2] in lx.ZH_ADJ_START and run[-1][3] != "eng")
        or run[-1][3] == "f"
        or run[-1][2] in lx.ZH_LOCALIZERS
    ):
        run = run[:-1]
    while len(run) > 1 and len(run[0][2]) == 1 and run[0][2] not in lx.ZH_ADJ_START:
        run = run[1:]
    if len(run) >= 3 and run[-1][2] in lx.ZH_GENERIC_TAILS:
        run = run[:-1]
    while len(run) > 1 and sum(t[1] - t[0] for t in run) > 14:
        run = run[1:]  # Chinese terms are head-final: keep the end of an over-long run
    if not run or (len(run) == 1 and run[0][3] == "eng"):
        return []  # single Latin words are the acronym and English rules' business
    start, end = run[0][0], run[-1][1]
    name = text[start:end]
    if not _HAS_CJK.search(name) or len(name) < 2:
        return []
    kind = _chinese_type(name)
    if len(run) == 1:
        word, flag = run[0][2], run[0][3]
        # a bare verbal noun ("测试", "管理") is an activity, not a thing
        if flag not in lx.ZH_NOUN_FLAGS or flag == "vn" or word in lx.ZH_STOP:
            weak = word in lx.ZH_TECH_VERBS or word in lx.ZH_STOP or flag == "vn"
            return [Mention(name, kind, start, end, 0.5, weak=True)] if weak else []
        # one dictionary word can be a compound term ("参数化查询", "跨站请求伪造")
        weight = {2: 1.0, 3: 1.3}.get(len(name), 1.75) + 0.5 * (kind != "concept")
        return [Mention(name, kind, start, end, weight)]
    if all(t[2] in lx.ZH_STOP or t[3] == "eng" for t in run):
        return [Mention(name, kind, start, end, 0.8)]
    weight = min(2.5, 1.5 + 0.25 * (len(run) - 1)) + (0.5 if kind != "concept" else 0.0)
    return [Mention(name, kind, start, end, weight)]


def _chinese_type(name: str) -> str:
    if name.endswith(lx.ZH_CONTROL_SUFFIXES):
        return "control"
    if name.endswith(lx.ZH_VULNERABILITY_SUFFIXES):
        return "vulnerability"
    return "concept"
