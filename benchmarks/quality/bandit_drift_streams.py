"""Drifting classification streams for ``benchmarks/quality/bandit_drift.py``.

Bundled sets: the training split in a fresh seeded order each pass, as many passes as
the stream needs, its labels rewritten by :mod:`simulate.drift` (the label-to-action
map shifts by one at the change).  River's generators (offline, from its wheel):
``river_sea`` (SEA concepts 0 then 3 with 10 % label noise: abrupt, gradual through
``ConceptDriftStream`` over ``at / 2`` rounds, or recurring) and ``river_hyperplane``
(a rotating hyperplane, ``mag_change`` 0.001 on 5 of 10 features: continuous drift, the
same stream whatever the kind).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from banditree.datasets import CLASSIFICATION, load
from banditree.explore import event_uniforms
from simulate.drift import DriftKind, drift_labels

#: the bundled classification sets the issue's goal covers (>= 5,000 rows in all)
MIN_ROWS = 5000
RIVER_STREAMS = ("river_sea", "river_hyperplane")


def bundled_drift_sets() -> list[str]:
    """Bundled classification sets with at least :data:`MIN_ROWS` rows (train + test)."""
    out = []
    for name in CLASSIFICATION:
        ds = load(name)
        if len(ds.y_train) + len(ds.y_test) >= MIN_ROWS:
            out.append(name)
    return out


@dataclass(frozen=True)
class DriftStream:
    """Contexts ``(T, d)``, drifted labels ``(T,)``, the action uniforms and the change."""

    name: str
    kind: str
    x: np.ndarray
    y: np.ndarray
    n_actions: int
    uniforms: list[float]
    at: int
    #: z-scoring statistics (the training split's, or the stream's own for River)
    mean: np.ndarray
    sd: np.ndarray


def _uniforms(seed: int, n: int) -> list[float]:
    """The uniforms a banditree learner of ``seed`` draws for its default event ids."""
    return [event_uniforms(seed, f"{seed:x}-{i:x}")[0] for i in range(n)]


def _passes(n_rows: int, length: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    reps = -(-length // n_rows)
    return np.concatenate([rng.permutation(n_rows) for _ in range(reps)])[:length]


def make_stream(name: str, kind: DriftKind, at: int, length: int, seed: int) -> DriftStream:
    """The seeded drift stream ``name`` (a bundled set or one of :data:`RIVER_STREAMS`)."""
    if name in RIVER_STREAMS:
        x, y = _river(name, kind, at, length, seed)
        sd = x.std(axis=0)
        return DriftStream(
            name, kind, x, y, 2, _uniforms(seed, length), at, x.mean(axis=0),
            np.where(sd == 0.0, 1.0, sd),
        )  # fmt: skip
    ds = load(name)
    order = _passes(len(ds.y_train), length, seed)
    y = drift_labels(ds.y_train[order], ds.n_classes, kind, at, seed)
    sd = ds.X_train.std(axis=0)
    return DriftStream(
        name, kind, ds.X_train[order], y, ds.n_classes, _uniforms(seed, length), at,
        ds.X_train.mean(axis=0), np.where(sd == 0.0, 1.0, sd),
    )  # fmt: skip


def _rows(stream: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    rows = list(itertools.islice(stream, n))  # type: ignore[call-overload]
    keys = sorted(rows[0][0])
    x = np.array([[r[0][k] for k in keys] for r in rows], dtype=np.float64)
    return x, np.array([int(r[1]) for r in rows], dtype=np.int64)


def _river(name: str, kind: DriftKind, at: int, length: int, seed: int) -> tuple[np.ndarray, ...]:
    from river.datasets import synth

    if name == "river_hyperplane":
        return _rows(
            synth.Hyperplane(
                seed=seed, n_features=10, n_drift_features=5, mag_change=0.001,
                noise_percentage=0.05,
            ),
            length,
        )  # fmt: skip

    def sea(variant: int, offset: int) -> synth.SEA:
        return synth.SEA(variant=variant, noise=0.1, seed=seed + offset)

    if kind == "gradual":
        return _rows(
            synth.ConceptDriftStream(
                stream=sea(0, 0), drift_stream=sea(3, 1), position=at + at // 4, width=at // 2,
                seed=seed,
            ),
            length,
        )  # fmt: skip
    old_x, old_y = _rows(sea(0, 0), length)
    new_x, new_y = _rows(sea(3, 1), length)
    t = np.arange(length)
    new = (t >= at) & ((t < 2 * at) | (kind != "recurring"))
    return np.where(new[:, None], new_x, old_x), np.where(new, new_y, old_y)
