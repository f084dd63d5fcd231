"""Concept drift on a classification stream: the label-to-action map changes over time.

Before round ``at`` the right action for label ``l`` is ``l``; after the change it is
``(l + 1) mod K`` (the map shifts by one: every action the model learned to play is now
wrong).  Kinds:

- ``abrupt``: the new map from round ``at`` on;
- ``gradual``: from round ``at`` each round follows the new map with a probability rising
  linearly from 0 to 1 over ``at / 2`` rounds;
- ``recurring``: the new map on rounds ``[at, 2 at)``, then the old map again.

:func:`drift_labels` rewrites a stream's labels (what the learner is scored against);
:func:`map_at` is the map in force after a round, for held-out evaluation.

:func:`drift_figures` measures one run's losses around the change: ``pre`` the mean loss
of the :data:`PRE_ROUNDS` rounds before it; ``post`` the mean loss from the change to
the end (for a recurring change, while the new map is in force, ``[at, 2 at)``);
``recovery`` the rounds after the change until a :data:`WINDOW`-round mean is back
within :data:`TOLERANCE` of the run's own ``pre`` after leaving that band (0: it never
left; ``None``: it did not come back within the stream; a gradual change is counted
from its start, so from the round its rising share first costs the learner); ``left``
the rounds after the change until the end of the first window that left that band
(``None``: none did), when the change first shows: on a gradual change a recovery only
a little after it is a mean that touched the band's edge, not a learner that caught up;
``worst`` the largest :data:`WINDOW`-round mean after the change; for a recurring change
``return_recovery`` and ``post_return``, the same after the old map comes back.
"""

from __future__ import annotations

from typing import Any, Literal, cast

import numpy as np

from banditree.datasets import Dataset

DriftKind = Literal["abrupt", "gradual", "recurring"]
DRIFT_KINDS: tuple[DriftKind, ...] = ("abrupt", "gradual", "recurring")


def new_map_probability(kind: DriftKind, rounds: np.ndarray, at: int) -> np.ndarray:
    """The probability that each round (0-based index) follows the new map."""
    t = np.asarray(rounds, dtype=np.float64)
    if kind == "abrupt":
        return (t >= at).astype(np.float64)
    if kind == "gradual":
        return np.clip((t - at + 1) / max(at / 2.0, 1.0), 0.0, 1.0)
    if kind == "recurring":
        return ((t >= at) & (t < 2 * at)).astype(np.float64)
    raise ValueError(f"drift must be one of {', '.join(DRIFT_KINDS)}; got {kind!r}")


def drift_shifts(kind: DriftKind, n_rounds: int, at: int, seed: int) -> np.ndarray:
    """``(n_rounds,)`` of 0 (old map) or 1 (new map), drawn with a seeded generator."""
    if at < 1:
        raise ValueError(f"the drift round must be >= 1, got {at}")
    p = new_map_probability(kind, np.arange(n_rounds), at)
    u = np.random.default_rng([seed, 27]).random(n_rounds)
    return (u < p).astype(np.int64)


def drift_labels(
    labels: np.ndarray, n_classes: int, kind: DriftKind, at: int, seed: int
) -> np.ndarray:
    """``labels`` of a stream, in order, with the drifting map applied round by round."""
    y = np.asarray(labels, dtype=np.int64)
    return (y + drift_shifts(kind, len(y), at, seed)) % n_classes


def map_at(kind: DriftKind, rounds_done: int, at: int) -> int:
    """The map (0 old, 1 new; the likelier one, while gradual) in force after
    ``rounds_done`` rounds, for held-out labels."""
    return int(new_map_probability(kind, np.array([rounds_done]), at)[0] >= 0.5)


def default_length(kind: DriftKind, at: int) -> int:
    """Rounds a drift stream runs: ``2 at`` (``3 at`` for ``recurring``: the return too)."""
    return 3 * at if kind == "recurring" else 2 * at


WINDOW = 500
TOLERANCE = 0.05
PRE_ROUNDS = 2000


def moving_average(losses: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """``out[j]`` = mean of ``losses[j : j + window]`` (the window starting at round ``j``)."""
    c = np.concatenate([[0.0], np.cumsum(losses, dtype=np.float64)])
    return (c[window:] - c[:-window]) / window


def _left_and_recovery(
    avg: np.ndarray, start: int, stop: int, target: float
) -> tuple[int | None, int | None]:
    """Rounds from ``start`` until the end of the first window (before ``stop``) whose
    mean is more than ``TOLERANCE`` above ``target`` (``None``: none was), and until the
    end of the first window back within it after that one (0 if none left the band,
    ``None`` if none came back)."""
    band = avg[start : stop - WINDOW + 1] <= target + TOLERANCE
    left = np.flatnonzero(~band)
    if not left.size:
        return None, 0
    back = np.flatnonzero(band[left[0] :])
    recovery = None if not back.size else int(left[0] + back[0]) + WINDOW
    return int(left[0]) + WINDOW, recovery


def drift_figures(losses: np.ndarray, at: int, kind: str) -> dict[str, Any]:
    """``pre``, ``post``, ``recovery``, ``worst`` (and the return's) of one run's losses."""
    losses = np.asarray(losses, dtype=np.float64)
    n = len(losses)
    if not 0 < at < n - WINDOW:
        raise ValueError(f"the change (round {at}) must leave {WINDOW} rounds of {n} after it")
    avg = moving_average(losses)
    pre = float(losses[max(0, at - PRE_ROUNDS) : at].mean())
    end = min(2 * at, n) if kind == "recurring" else n
    left, recovery = _left_and_recovery(avg, at, end, pre)
    out: dict[str, Any] = {
        "pre": pre,
        "post": float(losses[at:end].mean()),
        "recovery": recovery,
        "left": left,
        "worst": float(avg[at : max(at + 1, end - WINDOW + 1)].max()),
        "total": float(losses.mean()),
    }
    if kind == "recurring" and n > 2 * at + WINDOW:
        out["return_recovery"] = _left_and_recovery(avg, 2 * at, n, pre)[1]
        out["post_return"] = float(losses[2 * at :].mean())
    return out


def resolve_drift_at(kind: DriftKind, at: int | None, n_rounds: int) -> int:
    """``--drift-at``, or the middle of the stream (a third of it when recurring);
    checked to leave a :data:`WINDOW` of rounds after the change."""
    if at is None:
        at = n_rounds // 3 if kind == "recurring" else n_rounds // 2
    if not 1 <= at <= n_rounds - WINDOW - 1:
        raise ValueError(
            f"--drift-at must be in [1, {n_rounds - WINDOW - 1}] for a stream of {n_rounds} "
            f"rounds (the figures need {WINDOW} rounds after the change); got {at}"
        )
    return at


def seed_figures(runs: list[np.ndarray], at: int, kind: DriftKind) -> dict[str, Any]:
    """:func:`drift_figures` over the seeds' losses: means, the median recovery and
    ``left`` (a run that never recovers, or never left, counting as the longest; ``None``
    if that is the median)."""
    each = [drift_figures(losses, at, kind) for losses in runs]
    out: dict[str, Any] = {"kind": kind, "at": at, "seeds": len(each)}
    for key in ("pre", "post", "worst", "post_return"):
        if key in each[0]:
            out[key] = float(np.mean([f[key] for f in each]))
    for key in ("recovery", "left", "return_recovery"):
        if key in each[0]:
            values = sorted(float("inf") if f[key] is None else f[key] for f in each)
            mid = float(np.median(values))
            out[key] = None if mid == float("inf") else mid
    return out


def drift_streams(
    kind: str | None, at: int | None, dataset: Dataset, orders: list[np.ndarray]
) -> list[dict[str, Any]]:
    """Per seed (stream order), ``run_stream``'s drifted ``targets`` and ``test_targets``
    for ``simulate --drift kind --drift-at at``; none without ``kind``."""
    if kind is None:
        if at is not None:
            raise ValueError("--drift-at needs --drift")
        return []
    if kind not in DRIFT_KINDS:
        raise ValueError(f"--drift must be one of {', '.join(DRIFT_KINDS)}; got {kind!r}")
    if dataset.task != "classification":
        raise ValueError("--drift shifts a classification label-to-action map; this is regression")
    drift = cast(DriftKind, kind)
    at = resolve_drift_at(drift, at, len(orders[0]))
    k = dataset.n_classes

    def held_out(done: int) -> np.ndarray:
        out: np.ndarray = (dataset.y_test + map_at(drift, done, at)) % k
        return out

    return [
        {"targets": drift_labels(dataset.y_train[order], k, drift, at, seed),
         "test_targets": held_out}
        for seed, order in enumerate(orders)
    ]  # fmt: skip


def stream_targets(
    streams: list[dict[str, Any]], labels: np.ndarray, orders: list[np.ndarray]
) -> list[np.ndarray]:
    """What each seed's rounds are scored against: the drifted labels of
    :func:`drift_streams`, or the stream's own without a drift."""
    return [s["targets"] for s in streams] if streams else [labels[o] for o in orders]


def drift_report(
    kind: str | None, at: int | None, n_rounds: int, traces: dict[str, list[Any]]
) -> dict[str, Any]:
    """Each learner's :func:`seed_figures` from its seeds' traces (with ``losses``)."""
    drift = cast(DriftKind, kind)
    where = resolve_drift_at(drift, at, n_rounds)
    return {
        name: seed_figures([t.losses for t in runs], where, drift) for name, runs in traces.items()
    }
