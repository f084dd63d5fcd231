"""A reported reward becomes the loss the learner minimises, for either task."""

from __future__ import annotations

import pytest

from banditree.learners.reward import feedback_from_reward, loss_from_reward


@pytest.mark.parametrize(
    ("reward", "task", "loss"),
    [(1.0, "classification", 0.0), (0.25, "classification", 0.75), (0.0, "classification", 1.0),
     (3.5, "regression", -3.5), (-2.0, "regression", 2.0)],
)  # fmt: skip
def test_a_reward_is_the_loss_it_stands_for(reward: float, task: str, loss: float) -> None:
    assert loss_from_reward(reward, task) == loss
    assert feedback_from_reward(reward, task).loss == loss


def test_a_larger_reward_is_a_smaller_loss() -> None:
    for task in ("classification", "regression"):
        assert loss_from_reward(0.9, task) < loss_from_reward(0.1, task)
