"""Supervised (batch) DGT training, Algorithm 3 of the DGT paper, and bagged DGT-Forests.

The names load on first use (PEP 562): the trainers need torch, the model file
(:mod:`banditree.models.dgt.trained`) that serving reads does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banditree.core.lazy import lazy_names

if TYPE_CHECKING:
    from banditree.models.dgt.scaling import FeatureStandardizer, TargetMinMax, fold_scalers
    from banditree.supervised.config import TrainingConfig
    from banditree.supervised.estimator import (
        DGTClassifier,
        DGTEstimator,
        DGTRegressor,
        NotFittedError,
    )
    from banditree.supervised.forest import (
        DGTForest,
        DGTForestClassifier,
        DGTForestRegressor,
    )
    from banditree.supervised.trainer import train_tree

_WHERE = {
    "DGTClassifier": "banditree.supervised.estimator",
    "DGTEstimator": "banditree.supervised.estimator",
    "DGTForest": "banditree.supervised.forest",
    "DGTForestClassifier": "banditree.supervised.forest",
    "DGTForestRegressor": "banditree.supervised.forest",
    "DGTRegressor": "banditree.supervised.estimator",
    "FeatureStandardizer": "banditree.models.dgt.scaling",
    "NotFittedError": "banditree.supervised.estimator",
    "TargetMinMax": "banditree.models.dgt.scaling",
    "TrainingConfig": "banditree.supervised.config",
    "fold_scalers": "banditree.models.dgt.scaling",
    "train_tree": "banditree.supervised.trainer",
}

__all__ = [
    "DGTClassifier",
    "DGTEstimator",
    "DGTForest",
    "DGTForestClassifier",
    "DGTForestRegressor",
    "DGTRegressor",
    "FeatureStandardizer",
    "NotFittedError",
    "TargetMinMax",
    "TrainingConfig",
    "fold_scalers",
    "train_tree",
]

__getattr__ = lazy_names(__name__, _WHERE)
