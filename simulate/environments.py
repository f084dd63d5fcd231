"""Supervised data as bandit environments: the environment knows the label, the learner
sees only the loss of what it played (or, in full-information mode, the label).

Losses
------
* classification: ``loss_matrix[label, action]``; the default is the 0/1 loss
  ``1 - eye(K)``.  A custom matrix must hold values in ``[0, 1]`` (eq. 8 of the DGT
  paper reads ``reward = 1 - loss``).
* regression: squared ``(v - y)^2`` or Huber (DGT paper, section 5.3.2)
  ``0.5 r^2`` if ``|r| <= xi`` else ``xi |r| - 0.5 xi^2`` with ``r = v - y``.

The loss a round *incurs* (the progressive loss) is the loss of the played action
or value; for two-point feedback it is the mean of the two probe losses (both were
played).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from banditree.learners import Decision, Feedback

FeedbackMode = Literal["bandit", "one_point", "two_point", "full"]
RegressionLoss = Literal["squared", "huber"]


def squared_loss(value: np.ndarray | float, target: np.ndarray | float) -> np.ndarray:
    """``(value - target)^2``."""
    r = np.asarray(value, dtype=np.float64) - np.asarray(target, dtype=np.float64)
    return np.asarray(r * r)


def huber_loss(value: np.ndarray | float, target: np.ndarray | float, xi: float) -> np.ndarray:
    """``0.5 r^2`` if ``|r| <= xi`` else ``xi |r| - 0.5 xi^2`` (DGT paper, section 5.3.2)."""
    if not xi > 0:
        raise ValueError(f"huber xi must be > 0, got {xi}")
    r = np.abs(np.asarray(value, dtype=np.float64) - np.asarray(target, dtype=np.float64))
    return np.asarray(np.where(r <= xi, 0.5 * r * r, xi * r - 0.5 * xi * xi))


class Environment(ABC):
    """Answers a learner's decision on one labelled example."""

    task: str
    mode: FeedbackMode
    queries_per_round: int = 1

    @abstractmethod
    def incurred_loss(self, decision: Decision, target: float) -> float:
        """The loss the round incurred (what a progressive mean averages)."""

    @abstractmethod
    def bandit_feedback(self, decision: Decision, target: float) -> Feedback:
        """What a bandit learner is told: the loss(es) of what it played."""

    def feedback(self, decision: Decision, target: float) -> Feedback:
        """Feedback in this environment's mode (the label itself in full-information mode)."""
        if self.mode == "full":
            return Feedback(label=float(target))
        return self.bandit_feedback(decision, target)

    @abstractmethod
    def constant_losses(self, targets: np.ndarray) -> float:
        """Mean loss of the best constant action/value in hindsight over ``targets``."""


class ClassificationEnvironment(Environment):
    """Loss ``loss_matrix[label, action]`` of the played action (0/1 loss by default)."""

    task = "classification"

    def __init__(
        self,
        n_classes: int,
        *,
        mode: FeedbackMode = "bandit",
        loss_matrix: np.ndarray | None = None,
    ) -> None:
        if mode not in ("bandit", "full"):
            raise ValueError(
                f"feedback {mode!r} is for regression; classification takes bandit or full"
            )
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {n_classes}")
        matrix = 1.0 - np.eye(n_classes) if loss_matrix is None else np.asarray(loss_matrix, float)
        if matrix.shape != (n_classes, n_classes):
            raise ValueError(f"loss_matrix must be {n_classes} x {n_classes}, got {matrix.shape}")
        if not (np.isfinite(matrix).all() and matrix.min() >= 0.0 and matrix.max() <= 1.0):
            raise ValueError("loss_matrix values must lie in [0, 1]")
        self.n_classes = n_classes
        self.mode = mode
        self.loss_matrix = matrix

    def _action(self, decision: Decision) -> int:
        if decision.action is None:
            raise ValueError("a classification decision must carry an action")
        return int(decision.action)

    def incurred_loss(self, decision: Decision, target: float) -> float:
        return float(self.loss_matrix[int(target), self._action(decision)])

    def bandit_feedback(self, decision: Decision, target: float) -> Feedback:
        return Feedback(loss=self.incurred_loss(decision, target))

    def constant_losses(self, targets: np.ndarray) -> float:
        # mean over rounds of loss_matrix[y_t, a] for each constant a; the best a
        return float(self.loss_matrix[np.asarray(targets, dtype=np.int64)].mean(axis=0).min())


class RegressionEnvironment(Environment):
    """Squared or Huber loss of the played value; one-point, two-point or full feedback."""

    task = "regression"

    def __init__(
        self,
        *,
        mode: FeedbackMode = "one_point",
        loss: RegressionLoss = "squared",
        huber_xi: float = 1.0,
    ) -> None:
        if mode not in ("one_point", "two_point", "full"):
            raise ValueError(
                f"feedback {mode!r} is for classification; regression takes one_point, two_point or full"
            )
        if loss not in ("squared", "huber"):
            raise ValueError(f"regression loss must be squared or huber, got {loss!r}")
        if not huber_xi > 0:
            raise ValueError(f"huber_xi must be > 0, got {huber_xi}")
        self.mode = mode
        self.loss_name = loss
        self.huber_xi = float(huber_xi)
        self.queries_per_round = 2 if mode == "two_point" else 1

    def loss(self, value: np.ndarray | float, target: np.ndarray | float) -> np.ndarray:
        """The regression loss of ``value`` against ``target`` (vectorised)."""
        if self.loss_name == "squared":
            return squared_loss(value, target)
        return huber_loss(value, target, self.huber_xi)

    def incurred_loss(self, decision: Decision, target: float) -> float:
        if self.mode == "two_point":
            lo, hi = self._probes(decision)
            return 0.5 * float(self.loss(lo, target) + self.loss(hi, target))
        if decision.value is None:
            raise ValueError("a regression decision must carry a value")
        return float(self.loss(decision.value, target))

    def _probes(self, decision: Decision) -> tuple[float, float]:
        if decision.probes is None:
            raise ValueError("two-point feedback needs a decision with probes")
        return decision.probes

    def bandit_feedback(self, decision: Decision, target: float) -> Feedback:
        if self.mode == "two_point":
            plus, minus = self._probes(decision)
            return Feedback(
                losses=(float(self.loss(plus, target)), float(self.loss(minus, target)))
            )
        return Feedback(loss=self.incurred_loss(decision, target))

    def constant_losses(self, targets: np.ndarray) -> float:
        from scipy.optimize import minimize_scalar

        y = np.asarray(targets, dtype=np.float64)
        if self.loss_name == "squared":
            return float(self.loss(y.mean(), y).mean())
        best = minimize_scalar(
            lambda c: float(self.loss(c, y).mean()),
            bounds=(float(y.min()), float(y.max())),
            method="bounded",
        )
        return float(best.fun)


class EnvironmentOptions(Protocol):
    """The simulation options an environment is made from (``SimulationOptions``)."""

    feedback: FeedbackMode | None
    loss: str | None
    huber_xi: float
    loss_matrix: Path | None


def make_environment(task: str, options: EnvironmentOptions, n_classes: int) -> Environment:
    """The environment for ``task`` from the ``--feedback``/``--loss`` options."""
    if task == "classification":
        if options.loss not in (None, "zero_one"):
            raise ValueError(
                f"--loss {options.loss} is a regression loss; classification uses zero_one"
            )
        matrix = None
        if options.loss_matrix is not None:
            path = Path(options.loss_matrix)
            matrix = (
                np.load(path) if path.suffix == ".npy" else np.loadtxt(path, delimiter=",", ndmin=2)
            )
        return ClassificationEnvironment(
            n_classes, mode=options.feedback or "bandit", loss_matrix=matrix
        )
    if options.loss == "zero_one":
        raise ValueError("--loss zero_one is for classification; regression takes squared or huber")
    return RegressionEnvironment(
        mode=options.feedback or "two_point",  # exact gradient of the squared loss
        loss="huber" if options.loss == "huber" else "squared",
        huber_xi=options.huber_xi,
    )
