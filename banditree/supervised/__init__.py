"""Supervised (batch) DGT training, Algorithm 3 of the DGT paper, and bagged DGT-Forests.

The names load on first use (PEP 562): the trainers need torch, the model file
(:mod:`banditree.supervised.model_file`) that serving reads does not.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from banditree.supervised.scaling import FeatureStandardizer, TargetMinMax, fold_scalers
    from banditree.supervised.trainer import train_tree

_WHERE = {
    "DGTClassifier": "banditree.supervised.estimator",
    "DGTEstimator": "banditree.supervised.estimator",
    "DGTForest": "banditree.supervised.forest",
    "DGTForestClassifier": "banditree.supervised.forest",
    "DGTForestRegressor": "banditree.supervised.forest",
    "DGTRegressor": "banditree.supervised.estimator",
    "FeatureStandardizer": "banditree.supervised.scaling",
    "NotFittedError": "banditree.supervised.estimator",
    "TargetMinMax": "banditree.supervised.scaling",
    "TrainingConfig": "banditree.supervised.config",
    "fold_scalers": "banditree.supervised.scaling",
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


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'banditree.supervised' has no attribute {name!r}")
    return getattr(importlib.import_module(where), name)
