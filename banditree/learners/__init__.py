"""Learners: ``act(context) -> Decision`` and ``learn(decision, feedback)``."""

from banditree.core import Decision, DecisionColumns, Feedback
from banditree.learners.apprentice import Apprentice
from banditree.learners.base import Learner
from banditree.learners.config import LearnerConfig
from banditree.learners.factory import build_learner, restore_learner
from banditree.learners.families import known_kinds, register_model
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.uniform import UniformRandom
from banditree.learners.validation import InvalidInput

__all__ = [
    "Apprentice",
    "Decision",
    "DecisionColumns",
    "Feedback",
    "GradientBandit",
    "InvalidInput",
    "Learner",
    "LearnerConfig",
    "UniformRandom",
    "build_learner",
    "known_kinds",
    "register_model",
    "restore_learner",
]
