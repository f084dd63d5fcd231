"""The competitors of a run: the model under test, its full-information twin, baselines.

* the model: ``build_learner(learner_config(...))`` with the run's model kind and feedback;
* ``<model>_full_information``: the same model on the same stream, told the label
  and playing greedily (the supervised upper bound that ``regret`` is measured to);
* ``random``: uniform random actions (classification);
* ``linear``: a linear model with the same exploration and feedback;
* ``vw``: Vowpal Wabbit ``--cb_explore K --epsilon e`` (linear epsilon-greedy),
  when ``vowpalwabbit`` is installed (:mod:`simulate.vw`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.datasets import Dataset
from simulate.environments import ClassificationEnvironment, Environment, RegressionEnvironment


def learner_config(
    *,
    kind: str | None,
    dataset: Dataset,
    env: Environment,
    height: int | None = None,
    explore: float | None = None,
    explorer: str | None = None,
    explorer_parameter: float | None = None,
    explorer_exponent: float | None = None,
    delta: float | None = None,
    learning_rate: float | None = None,
    accumulate: int | None = None,
    n_trees: int | None = None,
    linear_update: str | None = None,
    ridge_l2: float | None = None,
    ridge_mix_rate: float | None = None,
    context_clip: float | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``LearnerConfig`` body for ``kind`` on ``dataset`` under ``env``'s feedback.

    ``kind`` None leaves the model kind (and its forest size) to the ``LearnerConfig``
    default for the task.  Regression targets: ``target_offset = min(y_train)`` and
    ``target_scale = max(y_train) - min(y_train)`` (the DGT paper's min-max scaling), so
    the model's output 0..1 spans the training range and values are played in the data's
    units.
    Classification explores with ``explorer`` (``explorer_parameter``,
    ``explorer_exponent``; unset: the ``LearnerConfig`` defaults); ``explore`` is the
    shorthand for epsilon-greedy with that epsilon.  The full-information twin plays
    greedily.  ``linear_update``, ``ridge_l2``, ``ridge_mix_rate`` and ``context_clip``
    are passed on when set (unset: the ``LearnerConfig`` defaults).  The
    full-information estimator gets ``env``'s loss: its Huber threshold
    (``huber_delta``) and, when not 0/1, its loss matrix.
    """
    config: dict[str, Any] = {
        "kind": kind,
        "task": dataset.task,
        "n_features": dataset.n_features,
        "seed": seed,
    }
    if dataset.schema is not None:  # named features: the schema sets the width
        del config["n_features"]
        config["features"] = dataset.schema
    if height is not None:
        config["height"] = height
    if learning_rate is not None:
        config["learning_rate"] = learning_rate
    if accumulate is not None:
        config["accumulate"] = accumulate
    if n_trees is not None:
        config["n_trees"] = n_trees
    for name, value in (
        ("linear_update", linear_update),
        ("ridge_l2", ridge_l2),
        ("ridge_mix_rate", ridge_mix_rate),
        ("context_clip", context_clip),
    ):
        if value is not None:
            config[name] = value
    if dataset.task == "classification":
        assert isinstance(env, ClassificationEnvironment)
        config["n_actions"] = dataset.n_classes
        config["estimator"] = "full" if env.mode == "full" else "bandit"
        if env.mode == "full":
            config["explorer"], config["explorer_parameter"] = "epsilon_greedy", 0.0
        elif explore is not None:
            config["explorer"], config["explorer_parameter"] = "epsilon_greedy", explore
        else:
            config["explorer"] = explorer
            config["explorer_parameter"] = explorer_parameter
            config["explorer_exponent"] = explorer_exponent
        if env.mode == "full" and not np.array_equal(env.loss_matrix, 1.0 - np.eye(env.n_classes)):
            config["loss_matrix"] = env.loss_matrix.tolist()
    else:
        low, high = float(dataset.y_train.min()), float(dataset.y_train.max())
        config["estimator"] = env.mode
        config["target_offset"] = low
        config["target_scale"] = high - low if high > low else 1.0
        assert isinstance(env, RegressionEnvironment)
        config["regression_loss"] = env.loss_name
        if env.loss_name == "huber":
            config["huber_delta"] = env.huber_xi
        if delta is not None:
            config["delta"] = delta
    return {k: v for k, v in config.items() if v is not None}


def full_information_twin(env: Environment) -> Environment:
    """The environment of the full-information twin (same loss, labels revealed)."""
    if isinstance(env, ClassificationEnvironment):
        return ClassificationEnvironment(env.n_classes, mode="full", loss_matrix=env.loss_matrix)
    assert isinstance(env, RegressionEnvironment)
    return RegressionEnvironment(mode="full", loss=env.loss_name, huber_xi=env.huber_xi)
