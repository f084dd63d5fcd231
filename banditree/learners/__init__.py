"""Learners: ``act(context) -> Decision`` and ``learn(decision, feedback)``."""

from banditree.learners.records import Decision, Feedback  # noqa: I001  (estimators import records)
from banditree.learners.base import Learner
from banditree.learners.apprentice import Apprentice, caller_defaults
from banditree.learners.config import LearnerConfig
from banditree.learners.decision_columns import DecisionColumns
from banditree.learners.factory import build_learner, known_kinds, register_model, restore_learner
from banditree.learners.featured import FeaturedLearner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.uniform import UniformRandom
from banditree.learners.validation import InvalidInput

__all__ = [
    "Apprentice",
    "Decision",
    "DecisionColumns",
    "FeaturedLearner",
    "Feedback",
    "GradientBandit",
    "InvalidInput",
    "Learner",
    "LearnerConfig",
    "UniformRandom",
    "build_learner",
    "caller_defaults",
    "known_kinds",
    "register_model",
    "restore_learner",
]
