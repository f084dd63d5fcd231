"""The first feedbacks of a learner each apply their update at once, then every
``accumulate``-th one does, through a checkpoint too."""

from __future__ import annotations

import pytest

from banditree.learners import Feedback, build_learner
from banditree.learners.factory import restore_learner
from banditree.learners.gradient_bandit import EAGER_ROUNDS, GradientBandit
from tests.learners.test_contract import stream


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_the_first_rounds_update_one_by_one_then_every_accumulate_th(task: str) -> None:
    config = {"n_features": 5, "height": 3, "accumulate": 4, "seed": 2, "task": task}
    if task == "classification":
        config.update(n_actions=3, kind="dgt")
    else:
        config["estimator"] = "two_point"
    learner = build_learner(config)
    assert isinstance(learner, GradientBandit)
    x, labels = stream(EAGER_ROUNDS + 8, seed=1)
    applied = []
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        if task == "classification":
            feedback = Feedback(loss=float(d.action != label))
        else:
            assert d.probes is not None
            feedback = Feedback(losses=[(p - label) ** 2 for p in d.probes])
        version = learner.version
        applied.append(learner.learn(d, feedback))
        assert learner.version == version + int(applied[-1])
    assert applied == [True] * EAGER_ROUNDS + [False, False, False, True] * 2


def test_a_restored_learner_finishes_its_eager_rounds() -> None:
    config = {"kind": "dgt", "n_features": 5, "n_actions": 3, "height": 3, "accumulate": 4}
    learner = build_learner({**config, "seed": 2})
    x, labels = stream(EAGER_ROUNDS + 4, seed=1)

    def feed(model: GradientBandit, start: int, stop: int) -> list[bool]:
        out = []
        for row, label in zip(x[start:stop], labels[start:stop].tolist(), strict=True):
            d = model.act(row)
            out.append(model.learn(d, Feedback(loss=float(d.action != label))))
        return out

    assert isinstance(learner, GradientBandit)
    assert feed(learner, 0, 10) == [True] * 10
    restored = restore_learner(*learner.state())
    assert isinstance(restored, GradientBandit)
    assert feed(restored, 10, EAGER_ROUNDS + 4) == [True] * (EAGER_ROUNDS - 10) + [False] * 3 + [
        True
    ]
