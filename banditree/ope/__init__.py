"""Off-policy estimates of a policy's value from logged bandit data (IPS, SNIPS, DR)."""

from banditree.ope.base import LoggedRounds, OffPolicyEstimator, check_logged_rounds
from banditree.ope.doubly_robust import DoublyRobust
from banditree.ope.ips import InverseProbabilityWeighting
from banditree.ope.snips import SelfNormalizedInverseProbabilityWeighting

__all__ = [
    "DoublyRobust",
    "InverseProbabilityWeighting",
    "LoggedRounds",
    "OffPolicyEstimator",
    "SelfNormalizedInverseProbabilityWeighting",
    "check_logged_rounds",
]
