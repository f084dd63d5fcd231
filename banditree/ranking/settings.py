"""Settings of the ranking learner and the checks of one ranking request."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from banditree.core import FloatArray
from banditree.learners.ranking_options import ID_RAMP

#: most candidates one decision may hold
MAX_CANDIDATES = 256
#: buckets of the hashed per-id play counts (the tree's ramp, ``RankingConfig.id_ramp``)
ID_BUCKETS = 1 << 12
#: rounds whose rank-one change of the ridge's inverse Gram matrix are kept apart before
#: one product folds them in (:class:`~banditree.learners.ridge.PerActionRidge`'s
#: ``defer``): a fold per 24 learns instead of two passes over the ``(d, d)`` matrix per
#: learn (``d`` 345 for 22 context and 14 candidate columns; the figure:
#: ``docs/decisions/0008-library-hot-paths.md``), and
#: the rows kept, 23 at most, stay small products that OpenBLAS runs on the calling thread
RIDGE_DEFER = 24


@dataclass(frozen=True)
class RankingConfig:
    """Settings of a :class:`RankingLearner` (defaults measured by ``benchmarks.quality.ranking_vs_vw``)."""

    n_context_features: int
    n_action_features: int
    height: int = 4
    learning_rate: float = 3e-3
    explorer: str = "fastcb"
    gamma_scale: float | None = None
    gamma_exponent: float | None = None
    ridge_l2: float = 1.0
    crosses: bool = True
    tree: bool = True
    context_clip: float = 3.0
    id_ramp: float = ID_RAMP
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_context_features", "n_action_features"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.n_context_features + self.n_action_features < 1:
            raise ValueError("a ranking model needs at least one context or action feature")
        if not (math.isfinite(self.context_clip) and self.context_clip > 0):
            raise ValueError(f"context_clip must be > 0, got {self.context_clip}")
        if not (math.isfinite(self.id_ramp) and self.id_ramp >= 0):
            raise ValueError(f"id_ramp must be >= 0, got {self.id_ramp}")


def id_buckets(ids: Sequence[str]) -> np.ndarray:
    """Each id's bucket of the play counts (CRC-32: the same in every process)."""
    return np.array([zlib.crc32(i.encode()) % ID_BUCKETS for i in ids], dtype=np.int64)


def check_candidates(
    context: FloatArray, actions: FloatArray, ids: Sequence[str], dc: int, da: int
) -> None:
    """Refuse a request the learner cannot score, naming the field and the bound."""
    n = len(ids)
    if not 1 <= n <= MAX_CANDIDATES:
        raise ValueError(f"actions: between 1 and {MAX_CANDIDATES} candidates, got {n}")
    if len(set(ids)) != n:
        raise ValueError("actions: candidate ids must be unique")
    if context.shape[0] != dc:
        raise ValueError(f"context: expected {dc} features, got {context.shape[0]}")
    if actions.shape[1] != da:
        raise ValueError(f"actions: expected {da} features per candidate, got {actions.shape[1]}")
    if not (np.isfinite(context).all() and np.isfinite(actions).all()):
        raise ValueError("context and action features must be finite numbers")
