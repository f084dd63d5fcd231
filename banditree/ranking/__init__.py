"""Ranking: candidate actions described by features, a changing set on every call.

Importing this package registers the ``ranking`` task with
:func:`banditree.learners.build_learner`.
"""

from banditree.learners.factory import register_task
from banditree.ranking.inputs import as_features, check_actions
from banditree.ranking.learner import MAX_CANDIDATES, RankingConfig, RankingLearner
from banditree.ranking.model import RankingModel
from banditree.ranking.records import RankDecision

register_task("ranking", RankingModel)

__all__ = [
    "MAX_CANDIDATES",
    "RankDecision",
    "RankingConfig",
    "RankingLearner",
    "RankingModel",
    "as_features",
    "check_actions",
]
