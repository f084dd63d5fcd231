"""Learner configuration in sections, its default rules and its cross-field rules.

* :mod:`.sections`, :mod:`.sections_learning`: the fields (bounds, descriptions);
* :mod:`.defaults`: every default that depends on other fields;
* :mod:`.rules`: the checks across fields;
* :mod:`.learner_config`: :class:`LearnerConfig`, the flat record of every section;
* :mod:`.options`: command-line options generated from the fields.
"""

from banditree.learners.config.defaults import (
    REGRESSION_FOREST_TREES,
    RIDGE_AUTO_MAX,
    default_kind,
    default_n_trees,
)
from banditree.learners.config.learner_config import SECTIONS, LearnerConfig

__all__ = [
    "REGRESSION_FOREST_TREES",
    "RIDGE_AUTO_MAX",
    "SECTIONS",
    "LearnerConfig",
    "default_kind",
    "default_n_trees",
]
