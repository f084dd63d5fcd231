"""Serving and learning models: ``api`` (predict, feedback), ``learner`` (the single writer
of a model, under a lease), ``snapshot`` (replicas swapping in new checkpoints) and
``replay`` (applying log entries, shared by the learner and offline audits)."""

from service.domain.runtime.api import ModelRuntime, Policy
from service.domain.runtime.learner import LearnerPolicy, ModelLearner

__all__ = ["LearnerPolicy", "ModelLearner", "ModelRuntime", "Policy"]
