"""Shared pieces of the exploration layer: the explorer protocol and seeded sampling."""

from __future__ import annotations

import hashlib
from itertools import accumulate
from typing import Protocol, runtime_checkable

from banditree.models.dgt.tree_ops import FloatArray

_TWO_64 = float(1 << 64)


@runtime_checkable
class Explorer(Protocol):
    """Maps predicted rewards ``(K,)`` to a probability mass ``(K,)`` summing to 1."""

    @property
    def name(self) -> str: ...

    def __call__(self, scores: FloatArray) -> FloatArray: ...

    @property
    def min_probability_factor(self) -> float:
        """``c`` such that every action gets at least ``c / K`` (0 when nothing is promised)."""
        ...


def event_uniforms(seed: int, event_id: str) -> tuple[float, float]:
    """Two independent uniforms in ``[0, 1)`` fixed by ``(seed, event_id)``.

    The first samples the action, the second the perturbation sign.
    """
    digest = hashlib.blake2b(f"{seed}:{event_id}".encode(), digest_size=16).digest()
    return (
        int.from_bytes(digest[:8], "little") / _TWO_64,
        int.from_bytes(digest[8:], "little") / _TWO_64,
    )


def sample_action(pmf: FloatArray, u: float) -> int:
    """Inverse-CDF sample of an action from ``pmf`` with the uniform ``u``.

    Returns the first ``k`` whose cumulative mass exceeds ``u`` times the total (a
    plain loop: for the few actions of a bandit it beats ``cumsum`` + ``searchsorted``).
    """
    cumulative = list(accumulate(pmf.tolist()))
    target = u * cumulative[-1]
    for k, c in enumerate(cumulative):
        if target < c:
            return k
    return len(cumulative) - 1


def make_explorer(name: str, parameter: float | None = None) -> Explorer:
    """Build an explorer by name: ``epsilon_greedy`` (epsilon), ``softmax`` (temperature), ``squarecb`` (gamma)."""
    from banditree.explore.epsilon_greedy import EpsilonGreedy
    from banditree.explore.softmax import Softmax
    from banditree.explore.squarecb import SquareCB

    if name == "epsilon_greedy":
        return EpsilonGreedy(0.3 if parameter is None else parameter)
    if name == "softmax":
        return Softmax(0.1 if parameter is None else parameter)
    if name == "squarecb":
        return SquareCB(100.0 if parameter is None else parameter)
    raise ValueError(f"explorer must be one of epsilon_greedy, softmax, squarecb; got {name!r}")
