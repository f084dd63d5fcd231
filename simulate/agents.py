"""The competitors of a run: the model under test, its full-information twin, baselines.

* the model: ``build_learner(learner_config(...))`` with the run's model kind and feedback;
* ``<model>_full_information``: the same model on the same stream, told the label
  and playing greedily (the supervised upper bound that ``regret`` is measured to);
* ``random``: uniform random actions (classification);
* ``linear``: a linear model with the same exploration and feedback (for regression,
  its output held to the training targets' range: :func:`linear_baseline`);
* ``vw``: Vowpal Wabbit ``--cb_explore K --epsilon e`` (linear epsilon-greedy),
  when ``vowpalwabbit`` is installed (:mod:`simulate.vw`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from banditree.datasets import Dataset
from banditree.learners import build_learner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.models.linear import LinearSpec
from simulate.environments import ClassificationEnvironment, Environment, RegressionEnvironment

#: Config fields that matter for classification only, and for regression only.
CLASSIFICATION_ONLY = ("explorer", "explorer_parameter", "explorer_exponent")
REGRESSION_ONLY = ("delta",)


def learner_config(
    *,
    kind: str | None,
    dataset: Dataset,
    env: Environment,
    explore: float | None = None,
    config: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``LearnerConfig`` body for ``kind`` on ``dataset`` under ``env``'s feedback.

    ``config`` holds the fields set on the command line (any field but those the
    simulator sets itself); the others keep the ``LearnerConfig`` defaults.  ``kind``
    None leaves the model kind (and its forest size) to the default for the task.
    Regression targets: ``target_offset = min(y_train)`` and ``target_scale =
    max(y_train) - min(y_train)`` (the DGT paper's min-max scaling), so the model's
    output 0..1 spans the training range and values are played in the data's units.
    Classification explores with the configured explorer; ``explore`` is the shorthand
    for epsilon-greedy with that epsilon.  The full-information twin plays greedily.
    Exploration settings reach classification only, ``delta`` regression only.  The
    full-information estimator gets ``env``'s loss: its Huber threshold
    (``huber_delta``) and, when not 0/1, its loss matrix.
    """
    given = dict(config or {})
    dropped = REGRESSION_ONLY if dataset.task == "classification" else CLASSIFICATION_ONLY
    body: dict[str, Any] = {
        "kind": kind,
        "task": dataset.task,
        "n_features": dataset.n_features,
        "seed": seed,
        **{k: v for k, v in given.items() if k not in dropped},
    }
    if dataset.schema is not None:  # named features: the schema sets the width
        del body["n_features"]
        body["features"] = dataset.schema
    if dataset.task == "classification":
        assert isinstance(env, ClassificationEnvironment)
        body["n_actions"] = dataset.n_classes
        body["estimator"] = "full" if env.mode == "full" else "bandit"
        if env.mode == "full" or explore is not None:
            for name in CLASSIFICATION_ONLY:
                body.pop(name, None)
            body["explorer"] = "epsilon_greedy"
            body["explorer_parameter"] = 0.0 if env.mode == "full" else explore
        if env.mode == "full" and not np.array_equal(env.loss_matrix, 1.0 - np.eye(env.n_classes)):
            body["loss_matrix"] = env.loss_matrix.tolist()
    else:
        low, high = float(dataset.y_train.min()), float(dataset.y_train.max())
        body["estimator"] = env.mode
        body["target_offset"] = low
        body["target_scale"] = high - low if high > low else 1.0
        assert isinstance(env, RegressionEnvironment)
        body["regression_loss"] = env.loss_name
        if env.loss_name == "huber":
            body["huber_delta"] = env.huber_xi
    return {k: v for k, v in body.items() if v is not None}


def full_information_twin(env: Environment) -> Environment:
    """The environment of the full-information twin (same loss, labels revealed)."""
    if isinstance(env, ClassificationEnvironment):
        return ClassificationEnvironment(env.n_classes, mode="full", loss_matrix=env.loss_matrix)
    assert isinstance(env, RegressionEnvironment)
    return RegressionEnvironment(mode="full", loss=env.loss_name, huber_xi=env.huber_xi)


def linear_baseline(config: Mapping[str, Any]) -> GradientBandit:
    """The ``linear`` regression baseline: a linear learner whose output is held to the
    training targets' range (``target_offset`` to ``target_offset + target_scale``, set
    by :func:`learner_config` from the data), as a tree's output is held within its leaf
    values; unheld, one-point feedback walks it far outside the targets and its loss
    grows (Abalone: a progressive loss in the hundreds against the trees' 30)."""
    learner = build_learner(dict(config))
    assert isinstance(learner, GradientBandit) and isinstance(learner.model, LinearSpec)
    learner.model.output_range = (0.0, 1.0)
    return learner
