"""Environments produce exactly the loss their loss function defines."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.learners import Decision
from simulate.environments import ClassificationEnvironment, RegressionEnvironment


def _decision(**fields: object) -> Decision:
    return Decision(event_id="e", context=(0.0,), model_version=0, **fields)  # type: ignore[arg-type]


def test_zero_one_loss_of_the_played_action() -> None:
    env = ClassificationEnvironment(4)
    for label in range(4):
        for action in range(4):
            fb = env.feedback(_decision(action=action), label)
            assert fb.loss == (0.0 if action == label else 1.0)


def test_custom_loss_matrix_entry_of_label_and_action() -> None:
    matrix = np.array([[0.0, 0.2, 0.9], [0.5, 0.0, 0.1], [1.0, 0.3, 0.0]])
    env = ClassificationEnvironment(3, loss_matrix=matrix)
    assert env.feedback(_decision(action=2), 0).loss == 0.9
    assert env.feedback(_decision(action=0), 1).loss == 0.5
    # best constant action over labels [0, 0, 1]: column means 1/6, 0.4/3, 1.9/3 -> action 1
    assert env.constant_losses(np.array([0, 0, 1])) == pytest.approx(0.4 / 3)


def test_full_information_mode_reveals_the_label() -> None:
    env = ClassificationEnvironment(3, mode="full")
    fb = env.feedback(_decision(action=1), 2)
    assert fb.label == 2.0 and fb.loss is None
    assert env.incurred_loss(_decision(action=1), 2) == 1.0


@pytest.mark.parametrize("value", [3.0, 3.9, 4.0, 4.6, 7.5, -2.0])
def test_squared_and_huber_losses(value: float) -> None:
    target, xi = 4.2, 1.5
    r = value - target
    squared = RegressionEnvironment(loss="squared")
    assert squared.feedback(_decision(value=value), target).loss == pytest.approx(r * r)
    huber = RegressionEnvironment(loss="huber", huber_xi=xi)
    expected = 0.5 * r * r if abs(r) <= xi else xi * abs(r) - 0.5 * xi * xi
    assert huber.feedback(_decision(value=value), target).loss == pytest.approx(expected)


def test_huber_is_continuous_at_xi() -> None:
    env = RegressionEnvironment(loss="huber", huber_xi=2.0)
    inside = env.loss(2.0 - 1e-9, 0.0)
    outside = env.loss(2.0 + 1e-9, 0.0)
    assert float(inside) == pytest.approx(2.0) and float(outside) == pytest.approx(2.0)


def test_two_point_feedback_queries_both_probes() -> None:
    env = RegressionEnvironment(mode="two_point", loss="squared")
    decision = _decision(value=1.0, probes=(1.5, 0.5))
    fb = env.feedback(decision, 2.0)
    assert fb.losses == (pytest.approx(0.25), pytest.approx(2.25))
    assert env.incurred_loss(decision, 2.0) == pytest.approx(1.25)
    assert env.queries_per_round == 2


def test_best_constant_value_squared_and_huber() -> None:
    y = np.array([0.0, 1.0, 2.0, 10.0])
    assert RegressionEnvironment().constant_losses(y) == pytest.approx(np.var(y))
    huber = RegressionEnvironment(loss="huber", huber_xi=1.0)
    grid = np.linspace(0, 10, 20001)
    brute = min(float(huber.loss(c, y).mean()) for c in grid)
    assert huber.constant_losses(y) == pytest.approx(brute, abs=1e-6)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ClassificationEnvironment(3, mode="one_point"), "is for regression"),
        (lambda: RegressionEnvironment(mode="bandit"), "is for classification"),
        (lambda: ClassificationEnvironment(2, loss_matrix=np.array([[0, 2.0], [1, 0]])), "[0, 1]"),
        (lambda: ClassificationEnvironment(3, loss_matrix=np.eye(2)), "must be 3 x 3"),
        (lambda: RegressionEnvironment(loss="huber", huber_xi=0.0), "huber_xi must be > 0"),
    ],
)
def test_bad_settings_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        make()  # type: ignore[operator]


def test_full_information_twin_learns_the_environments_loss() -> None:
    """The twin's estimator takes the run's loss matrix / Huber xi, also after a checkpoint."""
    from banditree.datasets.sources import load_source
    from banditree.learners import Feedback, GradientBandit, build_learner
    from banditree.persistence import dumps, loads
    from simulate.agents import full_information_twin, learner_config

    matrix = np.array([[0.0, 0.2, 0.9], [0.5, 0.0, 0.1], [1.0, 0.3, 0.0]])
    wine = load_source("wine")
    twin = full_information_twin(ClassificationEnvironment(3, loss_matrix=matrix))
    learner = loads(dumps(build_learner(learner_config(kind="dgt", dataset=wine, env=twin))))
    assert isinstance(learner, GradientBandit)
    g = learner.estimator.upstream(np.zeros(3), _decision(action=0), Feedback(label=1.0))
    # the default identity link: the output (0 here) is the predicted reward
    np.testing.assert_allclose(g, 2.0 * (0.0 - (1.0 - matrix[1])))

    diabetes = load_source("diabetes")
    twin = full_information_twin(RegressionEnvironment(loss="huber", huber_xi=2.0))
    learner = loads(dumps(build_learner(learner_config(kind="dgt", dataset=diabetes, env=twin))))
    assert isinstance(learner, GradientBandit)
    g = learner.estimator.upstream(np.array([5.0]), _decision(value=5.0), Feedback(label=0.0))
    np.testing.assert_allclose(g, [2.0])  # d/dv of xi |v - y| - xi^2 / 2 beyond xi
