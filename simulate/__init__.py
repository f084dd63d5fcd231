"""Offline replay: datasets -> bandit environments -> learners (in process or over HTTP),
progressive and held-out metrics, baselines, off-policy evaluation of logs, reports."""

from banditree.datasets.sources import load_source
from simulate.environments import ClassificationEnvironment, RegressionEnvironment
from simulate.experiment import SimulationOptions, simulate

__all__ = [
    "ClassificationEnvironment",
    "RegressionEnvironment",
    "SimulationOptions",
    "load_source",
    "simulate",
]
