"""DGT-Forest for supervised learning (section 5.2): bagged trees, voted or averaged."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Generic, Self, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from banditree.core.arrays import FloatArray
from banditree.models.dgt.frozen import FrozenTree
from banditree.supervised.config import TrainingConfig
from banditree.supervised.estimator import (
    DGTClassifier,
    DGTEstimator,
    DGTRegressor,
    NotFittedError,
)
from banditree.supervised.inputs import check_features, check_regression_targets, check_targets

TreeT = TypeVar("TreeT", bound=DGTEstimator)


class DGTForest(Generic[TreeT]):
    """Bagging of independently trained DGTs, each on its own bootstrap sample.

    Parameters
    ----------
    n_trees
        Number of trees (the paper uses 30).
    sample_fraction
        Bootstrap sample size relative to the training set, in ``(0, 1]``
        (paper grid ``{0.7, 0.85, 0.9, 1}``); rows are drawn with replacement.
    config, settings
        Training settings of every tree; tree ``i`` uses seed ``config.seed + i``.
    """

    tree_type: type[TreeT]

    def __init__(
        self,
        n_trees: int = 30,
        sample_fraction: float = 1.0,
        config: TrainingConfig | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(n_trees, int) or n_trees < 1:
            raise ValueError(f"n_trees must be an integer >= 1, got {n_trees!r}")
        if not 0.0 < sample_fraction <= 1.0:
            raise ValueError(f"sample_fraction must be in (0, 1], got {sample_fraction!r}")
        self.n_trees = n_trees
        self.sample_fraction = sample_fraction
        self.config = replace(config or TrainingConfig(), **settings)
        self.trees_: list[TreeT] = []

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Train ``n_trees`` trees on bootstrap samples of ``(X, y)``; returns ``self``."""
        x = check_features(X)
        targets = check_targets(y, x.shape[0])
        rng = np.random.default_rng(self.config.seed)
        size = max(1, round(self.sample_fraction * x.shape[0]))
        trees = []
        for i in range(self.n_trees):
            rows = rng.integers(0, x.shape[0], size=size)
            tree = self.tree_type(replace(self.config, seed=self.config.seed + i))
            trees.append(tree.fit(x[rows], targets[rows]))
        self.trees_ = trees
        return self

    def _fitted(self) -> list[TreeT]:
        if not self.trees_:
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(X, y) first")
        return self.trees_

    def freeze(self) -> list[FrozenTree]:
        """The member trees in frozen numpy form (raw inputs, original units)."""
        return [tree.freeze() for tree in self._fitted()]


class DGTForestClassifier(DGTForest[DGTClassifier]):
    """Majority vote of bagged :class:`DGTClassifier` trees (ties go to the smaller class)."""

    tree_type = DGTClassifier

    @property
    def classes_(self) -> np.ndarray:
        classes = [tree.classes_ for tree in self._fitted()]
        out: np.ndarray = np.unique(np.concatenate(classes))
        return out

    def votes(self, X: ArrayLike) -> np.ndarray:
        """Vote counts ``(n, n_classes)`` over :attr:`classes_`."""
        trees = self._fitted()
        classes = self.classes_
        x = check_features(X, trees[0].n_features)
        counts = np.zeros((x.shape[0], classes.shape[0]), dtype=np.int64)
        rows = np.arange(x.shape[0])
        for tree in trees:
            counts[rows, np.searchsorted(classes, tree.predict(x))] += 1
        return counts

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The most voted class for each row."""
        out: np.ndarray = self.classes_[np.argmax(self.votes(X), axis=1)]
        return out

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Accuracy in ``[0, 1]``."""
        pred = self.predict(X)
        return float(np.mean(pred == check_targets(y, pred.shape[0])))


class DGTForestRegressor(DGTForest[DGTRegressor]):
    """Mean of bagged :class:`DGTRegressor` trees."""

    tree_type = DGTRegressor

    def predict(self, X: ArrayLike) -> FloatArray:
        """Mean tree prediction in original units."""
        trees = self._fitted()
        x = check_features(X, trees[0].n_features)
        out: FloatArray = np.mean([tree.predict(x) for tree in trees], axis=0)
        return out

    def rmse(self, X: ArrayLike, y: ArrayLike) -> float:
        """Root mean squared error in original units."""
        pred = self.predict(X)
        truth = check_regression_targets(y, pred.shape[0])
        return float(np.sqrt(np.mean((pred - truth) ** 2)))
