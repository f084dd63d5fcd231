"""Learners: ``act(context) -> Decision`` and ``learn(decision, feedback)``.

The names load on first use (PEP 562): the command line reads the learner
configuration's fields (:mod:`banditree.learners.config`) without loading a learner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banditree.core.lazy import lazy_names

if TYPE_CHECKING:
    from banditree.core import Decision, DecisionColumns, Feedback
    from banditree.learners.apprentice import Apprentice
    from banditree.learners.base import Learner
    from banditree.learners.composed import ComposedLearner
    from banditree.learners.config import LearnerConfig
    from banditree.learners.factory import build_learner, restore_learner
    from banditree.learners.families import known_kinds, register_model
    from banditree.learners.featured import FeaturedLearner
    from banditree.learners.gradient_bandit import GradientBandit
    from banditree.learners.inferring import InferringLearner
    from banditree.learners.uniform import UniformRandom
    from banditree.learners.validation import InvalidInput

_WHERE = {
    "Apprentice": "banditree.learners.apprentice",
    "ComposedLearner": "banditree.learners.composed",
    "Decision": "banditree.core",
    "DecisionColumns": "banditree.core",
    "FeaturedLearner": "banditree.learners.featured",
    "Feedback": "banditree.core",
    "GradientBandit": "banditree.learners.gradient_bandit",
    "InferringLearner": "banditree.learners.inferring",
    "InvalidInput": "banditree.learners.validation",
    "Learner": "banditree.learners.base",
    "LearnerConfig": "banditree.learners.config",
    "UniformRandom": "banditree.learners.uniform",
    "build_learner": "banditree.learners.factory",
    "known_kinds": "banditree.learners.families",
    "register_model": "banditree.learners.families",
    "restore_learner": "banditree.learners.factory",
}

__all__ = [
    "Apprentice",
    "ComposedLearner",
    "Decision",
    "DecisionColumns",
    "FeaturedLearner",
    "Feedback",
    "GradientBandit",
    "InferringLearner",
    "InvalidInput",
    "Learner",
    "LearnerConfig",
    "UniformRandom",
    "build_learner",
    "known_kinds",
    "register_model",
    "restore_learner",
]

__getattr__ = lazy_names(__name__, _WHERE)
