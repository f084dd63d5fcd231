"""Bandit gradient estimators: from one observed loss to ``d loss / d model output``."""

from banditree.estimators.base import Estimator
from banditree.estimators.classification import ClassificationEstimator
from banditree.estimators.full_information import FullInformationEstimator
from banditree.estimators.one_point import OnePointEstimator
from banditree.estimators.two_point import TwoPointEstimator

__all__ = [
    "ClassificationEstimator",
    "Estimator",
    "FullInformationEstimator",
    "OnePointEstimator",
    "TwoPointEstimator",
]
