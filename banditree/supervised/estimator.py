"""Supervised DGT estimators (Algorithm 3): ``fit`` in torch, ``predict`` on the frozen numpy tree."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import Any, ClassVar, Self

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import Tensor

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.dgt.batch_grad import TreeLoss
from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.scaling import FeatureStandardizer, TargetMinMax, fold_scalers
from banditree.models.dgt.tree import DGTree
from banditree.supervised.config import TrainingConfig
from banditree.supervised.inputs import check_features, check_regression_targets, check_targets
from banditree.supervised.trainer import EpochCallback, train_tree

_GLOBAL_RNG_LOCK = threading.Lock()


class NotFittedError(RuntimeError):
    """Prediction was asked of an estimator that has not been fitted."""


class DGTEstimator(ABC):
    """Shared fit / freeze logic of :class:`DGTClassifier` and :class:`DGTRegressor`.

    Parameters
    ----------
    config
        Training settings; keyword ``settings`` override single fields of it
        (``DGTClassifier(height=8, epochs=50)``).

    Attributes
    ----------
    tree_
        The trained torch form (training inputs standardised, targets scaled).
    standardizer_
        Input standardisation fitted on the training inputs.
    loss_history_
        Mean training loss of each epoch.
    n_rows_
        Number of training rows.
    """

    task: ClassVar[str]
    #: training loss of the tree outputs
    tree_loss: ClassVar[TreeLoss]
    standardizer_: FeatureStandardizer

    def __init__(self, config: TrainingConfig | None = None, **settings: Any) -> None:
        self.config = replace(config or TrainingConfig(), **settings)
        self.tree_: DGTree | None = None
        self.loss_history_: list[float] = []
        self._frozen: FrozenTree | None = None

    @property
    def n_features(self) -> int:
        return self.freeze().n_features

    @abstractmethod
    def _encode_targets(self, y: ArrayLike, n_rows: int) -> tuple[Tensor, int, Any]:
        """Training targets, the number of tree outputs, and the target state to keep."""

    @abstractmethod
    def _keep_target_state(self, state: Any) -> None:
        """Store the target state of a successful fit (classes or target scaler)."""

    def fit(self, X: ArrayLike, y: ArrayLike, on_epoch: EpochCallback | None = None) -> Self:
        """Train a fresh tree on ``X`` ``(n, d)`` and ``y`` ``(n,)``; returns ``self``.

        ``on_epoch(epoch, mean training loss)`` is called after each epoch.  The
        estimator is left unchanged if the data are refused or training diverges.
        """
        x = check_features(X)
        targets, n_outputs, target_state = self._encode_targets(y, x.shape[0])
        standardizer = FeatureStandardizer.fit(x)
        cfg = self.config
        tree = self.initial_tree(x.shape[1], n_outputs)
        _ignore_constant_columns(tree, x)
        generator = torch.Generator().manual_seed(cfg.seed)
        inputs = torch.as_tensor(standardizer.transform(x), dtype=torch.float32)
        history = train_tree(
            tree, inputs, targets, self.tree_loss, cfg, generator, cfg.device, on_epoch
        )
        scaler = target_state if isinstance(target_state, TargetMinMax) else None
        frozen = fold_scalers(tree.freeze(), standardizer, scaler)
        if not (np.isfinite(frozen.weights).all() and np.isfinite(frozen.theta).all()):
            raise FloatingPointError("training produced non-finite tree parameters")
        self._keep_target_state(target_state)
        self.tree_, self.loss_history_, self._frozen = tree, history, frozen
        self.standardizer_ = standardizer
        self.n_rows_ = int(x.shape[0])
        return self

    def initial_tree(self, n_features: int, n_outputs: int) -> DGTree:
        """The untrained tree :meth:`fit` starts from (seeded by ``config.seed``)."""
        cfg = self.config
        # the global torch RNG is seeded and restored: one fit at a time (fits may run in threads)
        with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            return DGTree(n_features, n_outputs, cfg.height, cfg.hidden)

    def freeze(self) -> FrozenTree:
        """The fitted tree as a numpy :class:`FrozenTree` on raw inputs.

        Standardisation is folded into the node weights and, for regression, the
        min-max target scaling into the leaves (original units).
        """
        if self._frozen is None:
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(X, y) first")
        return self._frozen

    def leaves(self, X: ArrayLike) -> IntArray:
        """Leaf reached by each row of ``X``."""
        frozen = self.freeze()
        return frozen.leaves(check_features(X, frozen.n_features))

    def leaf_values(self, X: ArrayLike) -> FloatArray:
        """Leaf rows ``(n, K)``: class logits, or regression values in original units."""
        frozen = self.freeze()
        return frozen.predict(check_features(X, frozen.n_features))

    @abstractmethod
    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels or values for each row of ``X``."""

    @abstractmethod
    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Quality on ``(X, y)``, higher is better."""


def _ignore_constant_columns(tree: DGTree, x: FloatArray) -> None:
    """Zero the first layer's weights on columns constant in training.

    Standardised, such a column is 0 on every training row, so its weights get no
    gradient and keep their random start; a value it never took in training (a
    category first seen at test time, in its own or the "other" column) would then
    push every split by that random amount.  At zero it is ignored instead.
    Training is unchanged (but for a weight penalty on those weights and its share of
    the gradient-norm clip).
    """
    constant = np.flatnonzero(x.std(axis=0) <= 1e-12)
    if constant.size:
        with torch.no_grad():
            tree.layers[0][:, torch.as_tensor(constant)] = 0.0


class DGTClassifier(DGTEstimator):
    """A DGT trained with cross-entropy on the hard leaf logits.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DGTClassifier(height=2, epochs=20, progress=False).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    task = "classification"
    tree_loss = "cross_entropy"

    classes_: np.ndarray

    def _encode_targets(self, y: ArrayLike, n_rows: int) -> tuple[Tensor, int, Any]:
        labels = check_targets(y, n_rows)
        classes, codes = np.unique(labels, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(f"y must hold at least 2 classes, got {classes.shape[0]}")
        return torch.as_tensor(codes, dtype=torch.long), int(classes.shape[0]), classes

    def _keep_target_state(self, state: Any) -> None:
        self.classes_ = state

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The class of the arg-max leaf logit for each row."""
        logits = self.leaf_values(X)
        out: np.ndarray = self.classes_[np.argmax(logits, axis=1)]
        return out

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Accuracy in ``[0, 1]``."""
        pred = self.predict(X)
        return float(np.mean(pred == check_targets(y, pred.shape[0])))


class DGTRegressor(DGTEstimator):
    """A DGT trained with squared loss on min-max scaled targets, reported in original units."""

    task = "regression"
    tree_loss = "squared"

    target_scaler_: TargetMinMax

    def _encode_targets(self, y: ArrayLike, n_rows: int) -> tuple[Tensor, int, Any]:
        values = check_regression_targets(y, n_rows)
        scaler = TargetMinMax.fit(values)
        scaled = torch.as_tensor(scaler.transform(values), dtype=torch.float32)
        return scaled[:, None], 1, scaler

    def _keep_target_state(self, state: Any) -> None:
        self.target_scaler_ = state

    def predict(self, X: ArrayLike) -> FloatArray:
        """Predicted values in the original target units."""
        out: FloatArray = self.leaf_values(X)[:, 0]
        return out

    def rmse(self, X: ArrayLike, y: ArrayLike) -> float:
        """Root mean squared error in original units."""
        pred = self.predict(X)
        truth = check_regression_targets(y, pred.shape[0])
        return float(np.sqrt(np.mean((pred - truth) ** 2)))

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Coefficient of determination ``R^2``."""
        pred = self.predict(X)
        truth = check_regression_targets(y, pred.shape[0])
        residual = float(np.sum((truth - pred) ** 2))
        total = float(np.sum((truth - truth.mean()) ** 2))
        return 1.0 - residual / total if total > 0 else float(residual == 0.0)
