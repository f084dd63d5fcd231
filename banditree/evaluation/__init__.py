"""Offline (counterfactual) evaluation of candidate configurations on an interaction log.

Shared by ``banditree evaluate`` (a log file in, a report file out) and the service's
evaluation jobs (the model's own log, the report as the job's result):

* :mod:`~banditree.evaluation.counterfactual` replays the log through a candidate and
  scores it (IPS, SNIPS, DR, progressive value, bootstrap intervals);
* :mod:`~banditree.evaluation.support` withholds an estimate the log does not support;
* :mod:`~banditree.evaluation.reward` fits the doubly robust estimate's reward model;
* :mod:`~banditree.evaluation.named` encodes a log of named features for that model;
* :mod:`~banditree.evaluation.candidates` runs every candidate on one log.
"""

from banditree.evaluation.candidates import (
    CandidateOptions,
    complete_candidate,
    evaluate_candidates,
    use_rejection,
)
from banditree.evaluation.support import SupportRules

__all__ = [
    "CandidateOptions",
    "SupportRules",
    "complete_candidate",
    "evaluate_candidates",
    "use_rejection",
]
