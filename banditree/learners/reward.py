"""Rewards as losses: every learner minimises a loss; a caller may report a reward instead.

A classification model's rewards are in ``[0, 1]`` and its losses too (``loss = 1 -
reward``); a regression model's reward is any number and its loss the negated reward,
so a larger reward is always a smaller loss.
"""

from __future__ import annotations

from banditree.core.records import Feedback


def loss_from_reward(reward: float, task: str) -> float:
    """The loss that ``reward`` stands for on a model of ``task``."""
    return -reward if task == "regression" else 1.0 - reward


def feedback_from_reward(reward: float, task: str) -> Feedback:
    """The feedback of a decision that earned ``reward`` on a model of ``task``."""
    return Feedback(loss=loss_from_reward(reward, task))
