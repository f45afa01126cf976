"""Search strategies, Reciprocal Rank Fusion and the search engine."""

from .engine import (
    AVAILABLE_STRATEGIES,
    DEFAULT_STRATEGIES,
    OFFLINE_STRATEGIES,
    STRATEGIES,
    SearchEngine,
    parse_strategies,
)
from .fusion import RRF_K, reciprocal_rank_fusion

__all__ = [
    "AVAILABLE_STRATEGIES",
    "DEFAULT_STRATEGIES",
    "OFFLINE_STRATEGIES",
    "RRF_K",
    "STRATEGIES",
    "SearchEngine",
    "parse_strategies",
    "reciprocal_rank_fusion",
]
