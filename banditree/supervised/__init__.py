"""Supervised (batch) DGT training, Algorithm 3 of the DGT paper, and bagged DGT-Forests."""

from banditree.supervised.config import TrainingConfig
from banditree.supervised.estimator import (
    DGTClassifier,
    DGTEstimator,
    DGTRegressor,
    NotFittedError,
)
from banditree.supervised.forest import DGTForest, DGTForestClassifier, DGTForestRegressor
from banditree.supervised.scaling import FeatureStandardizer, TargetMinMax, fold_scalers
from banditree.supervised.trainer import train_tree

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
