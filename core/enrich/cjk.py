"""The jieba adapter: part-of-speech tagging of Chinese text, loaded once, on first use.

This module is the only part of the enrich package that imports jieba. Loading the dictionary
takes about a second, so it happens lazily, under a lock, the first time Chinese text arrives; a
process that never enriches Chinese never pays for it. The tokenizer is a private one with a few
terms of the field added (jieba cuts "会话" into "会/话"), so jieba's shared default tokenizer,
which other code may use, is left exactly as jieba ships it.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

from core.enrich.lexicon import ZH_DOMAIN_WORDS

__all__ = ["pos_tag"]

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
