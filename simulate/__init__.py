"""Offline replay: datasets -> bandit environments -> learners (in process or over HTTP),
progressive and held-out metrics, baselines, off-policy evaluation of logs, reports.

The names load on first use: ``banditree --help`` imports this package for its commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banditree.core.lazy import lazy_names

if TYPE_CHECKING:
    from banditree.datasets.sources import load_source
    from simulate.environments import ClassificationEnvironment, RegressionEnvironment
    from simulate.experiment import SimulationOptions, simulate

_WHERE = {
    "ClassificationEnvironment": "simulate.environments",
    "RegressionEnvironment": "simulate.environments",
    "SimulationOptions": "simulate.experiment",
    "load_source": "banditree.datasets.sources",
    "simulate": "simulate.experiment",
}

__all__ = [
    "ClassificationEnvironment",
    "RegressionEnvironment",
    "SimulationOptions",
    "load_source",
    "simulate",
]

__getattr__ = lazy_names(__name__, _WHERE)
