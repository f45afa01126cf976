"""Knowledge enrichment without an LLM: the built-in heuristics of the offline build (docs/architecture.md §4).

`offline_knowledge` fills the same `ChunkKnowledge` schema the LLM role returns (questions with
line ranges; entities and relations in `graph` mode), and `normalize_entity_name` is the key the
build merges entities by, across chunks and documents. jieba, which this package needs for
Chinese, loads on first use.
"""

from ..text.entity_names import normalize_entity_name
from .offline import MODES, offline_knowledge

__all__ = ["MODES", "normalize_entity_name", "offline_knowledge"]
