"""Exploration: stateless maps from predicted rewards to a probability mass over actions.

Each explorer is a small frozen object holding its setting (validated at construction,
with the bound in the message) and is called as ``explorer(scores) -> pmf``.  Scores
are predicted rewards (higher is better).  Sampling is separate
(:func:`sample_action`) and takes a uniform number, which a learner derives from
the event id so that one event always gets the same decision.
"""

from banditree.explore.base import (
    EXPLORER_DEFAULTS,
    Explorer,
    event_uniform_rows,
    event_uniforms,
    explore_and_sample,
    explore_list,
    explore_rows,
    make_explorer,
    sample_action,
    sample_actions,
)
from banditree.explore.epsilon_greedy import EpsilonGreedy, epsilon_greedy
from banditree.explore.fastcb import FastCB, fastcb
from banditree.explore.softmax import Softmax, softmax
from banditree.explore.squarecb import SquareCB, squarecb

__all__ = [
    "EXPLORER_DEFAULTS",
    "EpsilonGreedy",
    "Explorer",
    "FastCB",
    "Softmax",
    "SquareCB",
    "epsilon_greedy",
    "event_uniform_rows",
    "event_uniforms",
    "explore_and_sample",
    "explore_list",
    "explore_rows",
    "fastcb",
    "make_explorer",
    "sample_action",
    "sample_actions",
    "softmax",
    "squarecb",
]
