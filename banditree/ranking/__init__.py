"""Ranking: candidate actions described by features, a changing set on every call."""

from banditree.ranking.learner import MAX_CANDIDATES, RankingConfig, RankingLearner
from banditree.ranking.records import RankDecision

__all__ = ["MAX_CANDIDATES", "RankDecision", "RankingConfig", "RankingLearner"]
