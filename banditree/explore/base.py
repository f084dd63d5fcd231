"""Shared pieces of the exploration layer: the explorer protocol and seeded sampling."""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_right
from itertools import accumulate
from typing import Protocol, runtime_checkable

import numpy as np

from banditree.core.arrays import FloatArray, IntArray

_INV_TWO_64 = 1.0 / float(1 << 64)  # exact: a power of two
_blake2b = hashlib.blake2b
#: a digest's two little-endian 8-byte halves, as two Python ints
_halves = struct.Struct("<QQ").unpack


@runtime_checkable
class Explorer(Protocol):
    """Maps predicted rewards ``(K,)`` to a probability mass ``(K,)`` summing to 1.

    ``t`` is the number of rounds learned so far: explorers with a schedule (a
    decaying epsilon or temperature, a growing SquareCB gamma) read it.
    """

    @property
    def name(self) -> str: ...

    def __call__(self, scores: FloatArray, t: int = 0) -> FloatArray: ...

    def min_probability(self, n_actions: int, t: int = 0) -> float:
        """A lower bound on every action's probability at round ``t`` (0: none promised).

        For scores in ``[0, 1]``.
        """
        ...


def _event_digest(seed: int, event_id: str) -> bytes:
    """The 16 bytes that fix an event's uniforms."""
    return _blake2b(f"{seed}:{event_id}".encode(), digest_size=16).digest()


def _event_digests(seed: int, event_ids: list[str]) -> list[bytes]:
    """:func:`_event_digest` of every id: the hash of the shared ``"{seed}:"`` prefix is
    copied rather than redone per id (the same bytes hashed, so the same digests, at
    about half the cost)."""
    prefixed = _blake2b(f"{seed}:".encode(), digest_size=16)
    out: list[bytes] = []
    append = out.append
    for event_id in event_ids:
        h = prefixed.copy()
        h.update(event_id.encode())
        append(h.digest())
    return out


def event_uniforms(seed: int, event_id: str) -> tuple[float, float]:
    """Two independent uniforms in ``[0, 1)`` fixed by ``(seed, event_id)``.

    The first samples the action, the second the perturbation sign.
    """
    # each half rounded to float64 (as int / float does), then scaled exactly by 2**-64
    low, high = _halves(_event_digest(seed, event_id))
    return low * _INV_TWO_64, high * _INV_TWO_64


def event_uniform_rows(seed: int, event_ids: list[str]) -> FloatArray:
    """``event_uniforms(seed, id)`` for every event id, as ``(B, 2)`` (bit-identical).

    The digests are read as little-endian 64-bit halves in one array: converting each to
    float64 rounds as Python's int-to-float does, and the scale by 2**-64 is exact.
    """
    digests = b"".join(_event_digests(seed, event_ids))
    halves = np.frombuffer(digests, dtype="<u8").reshape(-1, 2)
    return halves.astype(np.float64) * _INV_TWO_64


def sample_action(pmf: FloatArray | list[float], u: float) -> int:
    """Inverse-CDF sample of an action from ``pmf`` (an array or Python floats) with the
    uniform ``u``.

    Returns the first ``k`` whose cumulative mass exceeds ``u`` times the total (on
    Python floats: for the few actions of a bandit it beats ``cumsum`` + ``searchsorted``).
    """
    return _sample_list(pmf if isinstance(pmf, list) else pmf.tolist(), u)


def _sample_list(pmf: list[float], u: float) -> int:
    """:func:`sample_action` of a pmf held as Python floats."""
    cumulative = list(accumulate(pmf))
    k = bisect_right(cumulative, u * cumulative[-1])  # the cumulative masses <= the target
    return k if k < len(cumulative) else len(cumulative) - 1


#: up to this many actions, :func:`explore_and_sample` computes the pmf on Python floats
#: (explorers with a ``pmf_list`` method): cheaper than numpy's cost per call there
PYTHON_MAX_ACTIONS = 32


def explore_and_sample(
    explorer: Explorer, scores: FloatArray, t: int, u: float
) -> tuple[int, float, int]:
    """``(action, propensity, greedy action)`` of one decision on ``scores`` ``(K,)``.

    The action is :func:`sample_action` of ``explorer(scores, t)`` with ``u``, the
    propensity its entry of that pmf, the greedy action the argmax of the scores.  For
    few actions an explorer's ``pmf_list`` (the same numbers, on Python floats) stands in
    for the numpy call.
    """
    pmf, best = explore_list(explorer, scores, t)
    action = _sample_list(pmf, u)
    return action, pmf[action], best


def explore_list(explorer: Explorer, scores: FloatArray, t: int) -> tuple[list[float], int]:
    """``(explorer(scores, t) as Python floats, the argmax of the scores)``: for few
    actions an explorer's ``pmf_list`` (the same numbers) stands in for the numpy call."""
    best = int(scores.argmax())
    pmf_list = getattr(explorer, "pmf_list", None)
    if pmf_list is not None and scores.shape[0] <= PYTHON_MAX_ACTIONS:
        pmf: list[float] = pmf_list(scores.tolist(), best, t)
    else:
        pmf = explorer(scores, t).tolist()
    return pmf, best


def sample_actions(pmfs: FloatArray, u: FloatArray) -> IntArray:
    """:func:`sample_action` for every row of ``pmfs`` ``(B, K)`` with the uniforms ``u`` ``(B,)``.

    The same numbers as the per-row loop: the cumulative sums add in the same order,
    and the first ``k`` whose cumulative mass exceeds the target is the count of the
    cumulative masses at or below it.
    """
    cumulative = np.cumsum(pmfs, axis=1)
    target = u * cumulative[:, -1]
    below = np.count_nonzero(cumulative <= target[:, None], axis=1)
    chosen: IntArray = np.minimum(below, pmfs.shape[1] - 1)
    return chosen


def explore_rows(explorer: Explorer, scores: FloatArray, t: int = 0) -> FloatArray:
    """``explorer(scores[b], t)`` for every row of ``scores`` ``(B, K)``, as ``(B, K)``.

    Explorers with a ``rows`` method compute every row at once (the same numbers);
    others are called row by row.
    """
    rows = getattr(explorer, "rows", None)
    if rows is not None:
        pmfs: FloatArray = rows(scores, t)
        return pmfs
    if scores.shape[0] == 0:
        return np.zeros(scores.shape)
    return np.stack([explorer(row, t) for row in scores])


#: explorer name -> (meaning of its parameter, default parameter, default exponent)
EXPLORER_DEFAULTS: dict[str, tuple[str, float, float]] = {
    "epsilon_greedy": ("epsilon", 0.3, 0.0),
    "softmax": ("temperature", 0.1, 0.0),
    "squarecb": ("gamma_scale", 50.0, 0.5),
    "fastcb": ("gamma_scale", 50.0, 0.5),
}


def make_explorer(
    name: str, parameter: float | None = None, exponent: float | None = None
) -> Explorer:
    """Build an explorer by name; ``None`` takes the default of :data:`EXPLORER_DEFAULTS`.

    ``epsilon_greedy`` (epsilon, decaying as ``(1 + t)^-exponent``), ``softmax``
    (temperature, likewise), ``squarecb`` (gamma scale, ``gamma_t = scale t^exponent``)
    and ``fastcb`` (the same gamma, divided by the greedy action's predicted loss).
    """
    from banditree.explore.epsilon_greedy import EpsilonGreedy
    from banditree.explore.fastcb import FastCB
    from banditree.explore.softmax import Softmax
    from banditree.explore.squarecb import SquareCB

    if name not in EXPLORER_DEFAULTS:
        raise ValueError(f"explorer must be one of {', '.join(EXPLORER_DEFAULTS)}; got {name!r}")
    _, default_parameter, default_exponent = EXPLORER_DEFAULTS[name]
    p = default_parameter if parameter is None else parameter
    e = default_exponent if exponent is None else exponent
    if name == "epsilon_greedy":
        return EpsilonGreedy(p, e)
    if name == "softmax":
        return Softmax(p, e)
    if name == "fastcb":
        return FastCB(p, e)
    return SquareCB(p, e)
