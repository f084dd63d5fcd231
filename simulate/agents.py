"""The competitors of a run: the model under test, its full-information twin, baselines.

* the model: ``build_learner(learner_config(...))`` with the run's model kind and feedback;
* ``<model>_full_information``: the same model on the same stream, told the label
  and playing greedily (the supervised upper bound that ``regret`` is measured to);
* ``random``: uniform random actions (classification);
* ``linear``: a linear model with the same exploration and feedback;
* ``vw``: Vowpal Wabbit ``--cb_explore K --epsilon e`` (linear epsilon-greedy),
  when ``vowpalwabbit`` is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.datasets import Dataset
from banditree.explore import event_uniforms, sample_action
from banditree.learners import Decision, Feedback
from simulate.environments import ClassificationEnvironment, Environment, RegressionEnvironment


def learner_config(
    *,
    kind: str,
    dataset: Dataset,
    env: Environment,
    height: int | None = None,
    explore: float | None = None,
    delta: float | None = None,
    learning_rate: float | None = None,
    accumulate: int | None = None,
    n_trees: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``LearnerConfig`` body for ``kind`` on ``dataset`` under ``env``'s feedback.

    Regression targets: ``target_offset = min(y_train)`` and ``target_scale =
    max(y_train) - min(y_train)`` (the DGT paper's min-max scaling), so the model's
    output 0..1 spans the training range and values are played in the data's units.
    The full-information estimator gets ``env``'s loss: its Huber threshold
    (``huber_delta``) and, when not 0/1, its loss matrix.
    """
    config: dict[str, Any] = {
        "kind": kind,
        "task": dataset.task,
        "n_features": dataset.n_features,
        "seed": seed,
    }
    if height is not None:
        config["height"] = height
    if learning_rate is not None:
        config["learning_rate"] = learning_rate
    if accumulate is not None:
        config["accumulate"] = accumulate
    if n_trees is not None:
        config["n_trees"] = n_trees
    if dataset.task == "classification":
        assert isinstance(env, ClassificationEnvironment)
        config["n_actions"] = dataset.n_classes
        config["estimator"] = "full" if env.mode == "full" else "bandit"
        config["explorer_parameter"] = 0.0 if env.mode == "full" else explore
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


def vowpalwabbit_available() -> bool:
    """True when the optional ``vowpalwabbit`` package imports."""
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        return False
    return True


class VowpalWabbitAgent:
    """Vowpal Wabbit linear epsilon-greedy: ``--cb_explore K --epsilon e``.

    The action is sampled from VW's pmf with the uniform fixed by ``(seed, event_id)``
    and learned with the label ``action:cost:probability`` (cost = loss).  The
    greedy action (for held-out scoring) is the pmf's argmax.
    """

    def __init__(
        self, n_actions: int, *, epsilon: float, seed: int, learning_rate: float | None = None
    ) -> None:
        import vowpalwabbit

        args = self.arguments_for(n_actions, epsilon, seed, learning_rate)
        self.arguments = args
        self.n_actions = n_actions
        self.seed = seed
        self._vw = vowpalwabbit.Workspace(args)

    @staticmethod
    def arguments_for(
        n_actions: int, epsilon: float, seed: int, learning_rate: float | None = None
    ) -> str:
        """The VW command line of this baseline."""
        args = f"--cb_explore {n_actions} --epsilon {epsilon} --random_seed {seed} --quiet"
        return args if learning_rate is None else f"{args} -l {learning_rate}"

    @staticmethod
    def _features(x: Sequence[float] | np.ndarray) -> str:
        return "| " + " ".join(f"f{j}:{float(v):.8g}" for j, v in enumerate(x) if v != 0)

    def _pmf(self, x: Sequence[float] | np.ndarray) -> np.ndarray:
        return np.asarray(self._vw.predict(self._features(x)), dtype=np.float64)

    def act(self, context: Sequence[float] | np.ndarray, event_id: str | None = None) -> Decision:
        pmf = self._pmf(context)
        u, _ = event_uniforms(self.seed, event_id or "")
        action = sample_action(pmf, u)
        greedy = int(np.argmax(pmf))
        return Decision(
            event_id=event_id or "",
            context=tuple(float(v) for v in context),
            model_version=0,
            action=action,
            propensity=float(pmf[action] / pmf.sum()),
            greedy_action=greedy,
            explored=action != greedy,
        )

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        if decision.action is None or feedback.loss is None:
            raise ValueError("the VW baseline learns from an action and a single loss")
        label = f"{decision.action + 1}:{feedback.loss}:{decision.propensity}"
        self._vw.learn(f"{label} {self._features(decision.context)}")
        return True

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        return np.array([int(np.argmax(self._pmf(x))) for x in contexts], dtype=np.float64)

    def close(self) -> None:
        self._vw.finish()
