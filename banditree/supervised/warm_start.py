"""Warm start of a bandit learner (moved to :mod:`banditree.learners.warm_start`)."""

from banditree.learners.warm_start import ModelMismatch, reward_logits, warm_start

__all__ = ["ModelMismatch", "reward_logits", "warm_start"]
